"""``pearl-verl advantage``: PEARL advantages for judged dialogues read from a JSONL file.

Each line is one dialogue in the reward manager's ``reward_extra_info`` format plus its group id:
``{"uid": ..., "acc": 0.9, ..., "emotion": 1.0, "judge_ok": 1, "completed": 1, "tutor_turns": 6}``
(dimension scores may be null where ``judge_ok`` is 0; any other keys, such as ``note``, are
shown but not used). The report shows, per group, each dialogue's shaped rewards r~ and final
advantage, then the batch metrics the trainer would log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pearl_verl.advantage.estimator import AdvantageBreakdown, AdvantageConfig, group_key
from pearl_verl.advantage.inputs import PearlInputs, breakdown_from_inputs, inputs_from_rows
from pearl_verl.advantage.metrics import advantage_metrics
from pearl_verl.dims import JUDGE_OK_KEY
from pearl_verl.errors import InputError, located
from pearl_verl.jsonl import read_objects

EXAMPLE_FILE = "example_judged_dialogues.jsonl"
_COL = 8  # column width: fits every default dimension name


@dataclass(frozen=True)
class AdvantageReport:
    """The judged rows, the estimator's inputs and intermediates, and the batch metrics."""

    rows: list[dict[str, Any]]
    inputs: PearlInputs
    breakdown: AdvantageBreakdown
    metrics: dict[str, float]
    config: AdvantageConfig


def example_path() -> Path:
    """The judged-dialogue example shipped inside the package (the command's default input)."""
    return Path(str(resources.files("pearl_verl.resources").joinpath(EXAMPLE_FILE)))


def load_judged_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of judged dialogues.

    Raises:
        InputError: ``<file>:<line>: ...`` for a line that is not a JSON object, or whose ``uid``
            is missing or not a group id (:func:`pearl_verl.advantage.group_key`).
    """
    rows = []
    for line_no, row in read_objects(path, "judged-dialogue file"):
        if "uid" not in row:
            raise located(path, line_no, "missing (the group id of the dialogue).", field="uid")
        try:
            group_key(row["uid"])
        except ValueError as exc:
            raise located(path, line_no, f"uid {exc}") from None  # group_key's message reads on from the uid
        rows.append({**row, "_where": f"{path}:{line_no}"})
    if not rows:
        raise InputError(f"{path}: no judged dialogues found.")
    return rows


def build_report(rows: list[dict[str, Any]], config: AdvantageConfig) -> AdvantageReport:
    """Run the estimator on judged rows exactly as the trainer would.

    Raises:
        InputError: naming the row (``FILE:LINE`` from :func:`load_judged_rows`) and field of the
            first judged row without a dimension score, or with a field the estimator rejects.
    """
    labels = [str(row.get("_where", f"row {i + 1}")) for i, row in enumerate(rows)]
    for label, row in zip(labels, rows):
        missing = [d for d in config.dims if d not in row]
        if missing and row.get(JUDGE_OK_KEY, 1):  # a failed judgement (judge_ok=0) has no scores to give
            raise InputError(f"{label}: {missing[0]}: missing; a judged dialogue has a score per dimension "
                             f"{list(config.dims)} (or judge_ok=0).")
    inputs = inputs_from_rows(rows, config, labels=labels)
    # The uids go in as read: the estimator's group_key decides the groups, as in training.
    breakdown = breakdown_from_inputs(inputs, [row["uid"] for row in rows], config)
    metrics = advantage_metrics(inputs, breakdown, config.dims)
    return AdvantageReport(rows=rows, inputs=inputs, breakdown=breakdown, metrics=metrics, config=config)


def format_report(report: AdvantageReport) -> str:
    """A fixed-width table per group, then the metrics."""
    cfg = report.config
    header = (
        f"PEARL advantage: gamma={cfg.gamma}, discretize={cfg.discretize}, aggregation={cfg.aggregation}, "
        f"weights={'uniform' if cfg.weights is None else list(cfg.weights)}"
    )
    lines = [header, "columns: shaped reward r~ per dimension (discretized, turn-decayed), then advantage A"]
    dims_header = " ".join(f"{d[:_COL]:>{_COL}}" for d in cfg.dims)
    for uid, members in _groups(report):
        lines.append("")
        lines.append(f"group {uid} ({len(members)} dialogues)")
        lines.append(f"  {'turns':>5} {'done':>4} {'judge':>5} {dims_header} {'A':>7}  note")
        for i in members:
            lines.append("  " + _member_line(report, i))
    lines.append("")
    lines.append("metrics (as logged by the trainer):")
    lines.extend(f"  {key} = {value:.4f}" for key, value in sorted(report.metrics.items()))
    return "\n".join(lines)


def report_as_json(report: AdvantageReport) -> list[dict[str, Any]]:
    """One JSON-ready dict per dialogue: its input row plus shaped rewards and advantage."""
    out = []
    for i, row in enumerate(report.rows):
        shaped = report.breakdown.rewards[i].tolist()
        out.append(
            {
                **{k: v for k, v in row.items() if k != "_where"},
                "shaped": {d: (None if v != v else round(v, 6)) for d, v in zip(report.config.dims, shaped)},
                "advantage": round(float(report.breakdown.advantages[i]), 6),
            }
        )
    return out


def _groups(report: AdvantageReport) -> Iterable[tuple[str, list[int]]]:
    """(group key, member rows) per group, as the estimator grouped them (ids in first-seen order)."""
    members: dict[int, list[int]] = {}
    for i, group in enumerate(report.breakdown.group.tolist()):
        members.setdefault(group, []).append(i)
    return [(group_key(report.rows[rows[0]]["uid"]), rows) for rows in members.values()]


def _member_line(report: AdvantageReport, i: int) -> str:
    inputs, bd = report.inputs, report.breakdown
    if bool(inputs.valid[i]):
        shaped = " ".join(f"{v:{_COL}.3f}" for v in bd.rewards[i].tolist())
    else:
        shaped = " ".join(f"{'-':>{_COL}}" for _ in report.config.dims)
    return (
        f"{int(inputs.num_turns[i]):>5} {'yes' if inputs.completed[i] else 'no':>4} "
        f"{'ok' if inputs.valid[i] else 'FAIL':>5} {shaped} {float(bd.advantages[i]):+7.3f}  "
        f"{report.rows[i].get('note', '')}"
    )
