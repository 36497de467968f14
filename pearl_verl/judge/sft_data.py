"""Judge-SFT data: annotated trajectories -> verl SFT parquet, with the paper's noise filter.

The paper trains its judge on trajectories annotated by a strong model (Gemini-3-Pro) with
dimension scores and rationales, "after filtering out noisy and inconsistent annotations"
(appendix "Judge Agent"). The filter is not specified; ours drops, in this order:

1. ``malformed``: an annotation that breaks the judge's output contract (the strict parser);
2. ``inconsistent``: an annotation that contradicts itself or the record
   (:data:`CONSISTENCY_RULES`, e.g. g = 1 for a session that was cut off);
3. ``disagreement``: a trajectory whose valid annotations (when it has several, e.g. repeated
   annotator samples) disagree on the gate, or on a gated dimension score by more than
   ``max_spread``.

A kept trajectory yields one SFT example: the judge prompt exactly as the judge sees it
(:func:`pearl_verl.judge.prompt.judge_messages`) and, as the assistant turn, the annotation
closest to the per-dimension median, re-serialised in the exact output format. Rows go to verl's
multi-turn SFT dataset (``messages`` column; ``enable_thinking`` False, the judge answers without
a reasoning block).

Input lines: ``{"id": ..., "episode": EpisodeRecord.to_dict(), "annotations": [a, ...]}`` (or a
single ``"annotation"``), each annotation the judge output as a JSON object or as raw text.
"""

from __future__ import annotations

import json
import statistics
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_objects
from pearl_verl.judge.judge_contract import CriterionScore
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement
from pearl_verl.judge.prompt import canonical_output, judge_messages
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.scoring import completion_gate, gated_dimension_scores

Raw = Mapping[str, int]  # criterion id -> raw score

CONSISTENCY_RULES: tuple[tuple[str, str, Callable[[Raw, EpisodeRecord], bool]], ...] = (
    (
        "gate_on_cut_off",
        "complete.session_complete=1 for a session that was cut off or left without a solution",
        lambda raw, episode: raw["complete.session_complete"] == 1 and not episode.ended_normally,
    ),
    (
        "conclusion_without_completion",
        "complete.conclusion=2 (solution confirmed and wrapped up) with complete.session_complete=0",
        lambda raw, episode: raw["complete.session_complete"] == 0 and raw["complete.conclusion"] == 2,
    ),
    (
        "complete_on_wrong_answer",
        "complete.session_complete=1 with acc.toward_reference=0 (guidance ends on a wrong answer)",
        lambda raw, episode: raw["complete.session_complete"] == 1 and raw["acc.toward_reference"] == 0,
    ),
    (
        "tutor_solved_without_leak",
        "guide.student_agency=0 (the tutor solved it) with leak.final_answer=2 and leak.key_steps=2",
        lambda raw, episode: (
            raw["guide.student_agency"] == 0 and raw["leak.final_answer"] == 2 and raw["leak.key_steps"] == 2
        ),
    ),
)
"""``(name, description, violated(raw scores, episode))``: contradictions that mark an annotation as noise."""


@dataclass(frozen=True)
class NoiseFilterConfig:
    """Settings of the annotation noise filter.

    Attributes:
        max_spread: largest allowed range (max - min) of a gated dimension score in [0, 1] across
            a trajectory's valid annotations.
        check_consistency: apply :data:`CONSISTENCY_RULES`.
    """

    max_spread: float = 0.5
    check_consistency: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_spread <= 1.0:
            raise InputError(f"max_spread={self.max_spread!r} must lie in [0, 1] (dimension scores are in [0, 1]).")


@dataclass
class FilterReport:
    """Counts of one conversion: trajectories read/kept and drops by reason."""

    trajectories: int = 0
    kept: int = 0
    annotations: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n


def parse_annotation(annotation: Any, rubric: Rubric = RUBRIC) -> tuple[CriterionScore, ...]:
    """An annotation (JSON object or raw text) through the judge's strict parser.

    Raises:
        JudgeOutputError: when it breaks the output contract.
    """
    text = annotation if isinstance(annotation, str) else json.dumps(annotation)
    return parse_judgement(text, rubric)


def violated_rules(scores: Sequence[CriterionScore], episode: EpisodeRecord) -> list[str]:
    """Names of the :data:`CONSISTENCY_RULES` an annotation breaks."""
    raw = {f"{s.dimension}.{s.criterion}": s.raw for s in scores}
    return [name for name, _, violated in CONSISTENCY_RULES if violated(raw, episode)]


def select_annotation(
    episode: EpisodeRecord,
    annotations: Sequence[Any],
    config: NoiseFilterConfig,
    report: FilterReport,
    rubric: Rubric = RUBRIC,
) -> tuple[CriterionScore, ...] | None:
    """The annotation to train on, or None when the filter drops the trajectory (counted in ``report``)."""
    valid: list[tuple[CriterionScore, ...]] = []
    for annotation in annotations:
        report.annotations += 1
        try:
            scores = parse_annotation(annotation, rubric)
        except JudgeOutputError as exc:
            report.drop(f"malformed_{exc.reason}")
            continue
        broken = violated_rules(scores, episode) if config.check_consistency else []
        if broken:
            report.drop(f"inconsistent_{broken[0]}")
            continue
        valid.append(scores)
    if not valid:
        return None
    gates = [completion_gate(s, rubric) for s in valid]
    dims = [gated_dimension_scores(s, g) for s, g in zip(valid, gates, strict=True)]
    spread = max(max(d[k] for d in dims) - min(d[k] for d in dims) for k in DIMENSIONS)
    if len(set(gates)) > 1 or spread > config.max_spread + 1e-9:
        report.drop("disagreement")
        return None
    median = {k: statistics.median(d[k] for d in dims) for k in DIMENSIONS}
    best = min(range(len(valid)), key=lambda i: sum(abs(dims[i][k] - median[k]) for k in DIMENSIONS))
    return valid[best]


def sft_row(
    key: str, episode: EpisodeRecord, scores: Sequence[CriterionScore], rubric: Rubric = RUBRIC
) -> dict[str, Any]:
    """One verl multi-turn SFT example: the judge prompt and the annotation as the assistant reply."""
    target: dict[str, dict[str, tuple[int, str]]] = {d: {} for d in DIMENSIONS}
    for score in scores:
        target[score.dimension][score.criterion] = (score.raw, score.rationale)
    messages = [*judge_messages(episode, rubric), {"role": "assistant", "content": canonical_output(target)}]
    return {"id": key, "messages": messages, "enable_thinking": False}


def convert_records(
    records: Iterable[Mapping[str, Any]],
    config: NoiseFilterConfig = NoiseFilterConfig(),
    rubric: Rubric = RUBRIC,
    locations: Sequence[str] | None = None,
) -> tuple[list[dict[str, Any]], FilterReport]:
    """Filter and convert annotated trajectories into SFT rows.

    Args:
        locations: where each record came from (``FILE:LINE``), named in errors; default ``record N``.

    Raises:
        InputError: for a record without an episode or annotations, or whose episode is malformed
            (a data-preparation bug, not noise), naming its location.
    """
    report, rows = FilterReport(), []
    for number, record in enumerate(records, start=1):
        report.trajectories += 1
        where = locations[number - 1] if locations is not None else f"record {number}"
        key = str(record.get("id", f"record-{number}"))
        if "episode" not in record or not ("annotations" in record or "annotation" in record):
            raise InputError(f"{where}: needs 'episode' and 'annotations' (or 'annotation'); has {sorted(record)}.")
        annotations = record.get("annotations", [record.get("annotation")])
        if isinstance(annotations, str | Mapping):
            annotations = [annotations]
        try:
            episode = EpisodeRecord.from_dict(record["episode"])
        except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong type
            raise InputError(f"{where}: episode: not an episode record ({type(exc).__name__}: {exc})") from None
        chosen = select_annotation(episode, list(annotations), config, report, rubric)
        if chosen is not None:
            report.kept += 1
            rows.append(sft_row(key, episode, chosen, rubric))
    return rows, report


def is_validation(key: str, fraction: float) -> bool:
    """Stable train/validation split by id (the same id always lands in the same split)."""
    return (zlib.crc32(key.encode()) % 10_000) < fraction * 10_000


def convert_file(
    input_path: Path,
    train_path: Path,
    val_path: Path | None = None,
    val_fraction: float = 0.0,
    config: NoiseFilterConfig = NoiseFilterConfig(),
) -> FilterReport:
    """Convert a JSONL of annotated trajectories into parquet file(s) for verl's SFT trainer.

    Raises:
        InputError: for an invalid ``val_fraction``, a bad input line, or a record without episode/annotations.
    """
    import pandas as pd

    if not 0.0 <= val_fraction < 1.0 or (val_fraction > 0) != (val_path is not None):
        raise InputError(
            f"val_fraction={val_fraction} needs to be in [0, 1) and > 0 exactly when a validation path is given."
        )
    lines = list(read_objects(input_path, "annotated-trajectory file"))
    locations = [f"{input_path}:{number}" for number, _ in lines]
    rows, report = convert_records([record for _, record in lines], config, locations=locations)
    val = [r for r in rows if val_path is not None and is_validation(r["id"], val_fraction)]
    train = [r for r in rows if not (val_path is not None and is_validation(r["id"], val_fraction))]
    train_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(train, columns=["id", "messages", "enable_thinking"]).to_parquet(train_path, index=False)
    if val_path is not None:
        val_path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(val, columns=["id", "messages", "enable_thinking"]).to_parquet(val_path, index=False)
    return report
