"""Tables of an eval-tutor run, recomputed from its results JSONL alone.

Scores are on the paper's 0-100 scale: a dimension's cell is the mean over judged dialogues of the
judge's dimension score times 100, with its 95% Student-t interval (``mean ± half-width``); Avg is
the mean of each dialogue's 8-dimension average; Rounds is the mean number of tutor turns of the same
dialogues. Dialogues flagged ``judge_ok=0`` (or whose episode failed) are excluded and counted in
the ``flagged`` column, never scored 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pearl_verl.dims import DIMENSIONS, JUDGE_OK_KEY, TUTOR_TURNS_KEY
from pearl_verl.stats import Estimate, mean_ci

DIMENSION_TITLES: dict[str, str] = {
    "acc": "Acc",
    "leak": "Leak",
    "complete": "Complete",
    "load": "Load",
    "guide": "Guide",
    "meta": "Meta",
    "adaptive": "Adaptive",
    "emotion": "Emotion",
}
assert tuple(DIMENSION_TITLES) == DIMENSIONS

SIMULATOR_TITLES: dict[str, str] = {
    "pearl": "Our Simulator (PEARL)",
    "mathdial": "MathDial Student",
    "socraticlm": "SocraticLM Student",
}


@dataclass(frozen=True)
class GroupStats:
    """One (tutor, simulator) cell block of the table.

    Attributes:
        tutor: tutor name.
        simulator: simulator name.
        dims: per dimension, the 0-100 estimate over judged dialogues.
        avg: the 0-100 estimate of the per-dialogue 8-dimension average.
        rounds: mean tutor turns of the judged dialogues.
        judged: dialogues in the estimates.
        flagged: dialogues excluded (failed episode or judgement).
        end_reasons: episode end reasons over all of the group's dialogues.
    """

    tutor: str
    simulator: str
    dims: Mapping[str, Estimate]
    avg: Estimate
    rounds: Estimate
    judged: int
    flagged: int
    end_reasons: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tutor": self.tutor,
            "simulator": self.simulator,
            "judged": self.judged,
            "flagged": self.flagged,
            "dims": {d: e.to_dict() for d, e in self.dims.items()},
            "avg": self.avg.to_dict(),
            "rounds": self.rounds.to_dict(),
            "end_reasons": dict(self.end_reasons),
        }


def dialogue_avg(judge: Mapping[str, Any]) -> float:
    """A judged dialogue's average over the 8 dimensions, in [0, 1]."""
    return sum(float(judge[d]) for d in DIMENSIONS) / len(DIMENSIONS)


def judged(row: Mapping[str, Any]) -> bool:
    """Whether a result line carries a usable judgement."""
    judge = row.get("judge")
    return row.get("episode") is not None and judge is not None and bool(judge.get(JUDGE_OK_KEY))


def group_stats(rows: Sequence[Mapping[str, Any]], tutor: str, simulator: str) -> GroupStats | None:
    """Estimates for one (tutor, simulator); None when it has no judged dialogue."""
    mine = [r for r in rows if r["tutor"] == tutor and r["simulator"] == simulator]
    good = [r["judge"] for r in mine if judged(r)]
    reasons = Counter(r["episode"]["end_reason"] if r.get("episode") else "error" for r in mine)
    if not good:
        return None
    return GroupStats(
        tutor,
        simulator,
        {d: mean_ci([float(j[d]) for j in good]).scaled(100) for d in DIMENSIONS},
        mean_ci([dialogue_avg(j) for j in good]).scaled(100),
        mean_ci([float(j[TUTOR_TURNS_KEY]) for j in good]),
        len(good),
        len(mine) - len(good),
        dict(reasons),
    )


def paired_gain(rows: Sequence[Mapping[str, Any]], simulator: str, base: str, new: str) -> Estimate | None:
    """Avg of ``new`` minus Avg of ``base`` over items both judged (0-100), with a paired interval.

    Items are matched across tutors, so the per-item difference removes the items' own difficulty
    from the interval.
    """
    by_item: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["simulator"] == simulator and row["tutor"] in (base, new) and judged(row):
            by_item.setdefault(row["item_id"], {})[row["tutor"]] = dialogue_avg(row["judge"])
    diffs = [100 * (v[new] - v[base]) for v in by_item.values() if len(v) == 2]
    return mean_ci(diffs) if diffs else None


def cell(estimate: Estimate, digits: int = 1) -> str:
    """``mean ± half-width`` as a table cell (``mean`` alone when n = 1)."""
    if estimate.n < 2:
        return f"{estimate.mean:.{digits}f}"
    return f"{estimate.mean:.{digits}f} ± {estimate.half_width:.{digits}f}"


def main_table(groups: Sequence[GroupStats], with_simulator: bool) -> str:
    """The paper's tutoring table: Acc ... Emotion, Avg, Rounds, plus n and flagged."""
    head = ["Tutor", *(["Student Simulator"] if with_simulator else []), *DIMENSION_TITLES.values()]
    head += ["Avg", "Rounds", "n", "flagged"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for g in groups:
        cells = [g.tutor, *([SIMULATOR_TITLES.get(g.simulator, g.simulator)] if with_simulator else [])]
        cells += [cell(g.dims[d]) for d in DIMENSIONS]
        cells += [cell(g.avg), cell(g.rounds), str(g.judged), str(g.flagged)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cross_simulator_table(
    rows: Sequence[Mapping[str, Any]], groups: Sequence[GroupStats], tutors: Sequence[str], simulators: Sequence[str]
) -> str:
    """The paper's compact cross-simulator table: one row per simulator, each tutor's Avg.

    With exactly two tutors a Gain column (second minus first, paired over matched items) follows.
    """
    by_key = {(g.tutor, g.simulator): g for g in groups}
    head = ["Student Simulator", *tutors, *(["Gain"] if len(tutors) == 2 else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for simulator in simulators:
        cells = [SIMULATOR_TITLES.get(simulator, simulator)]
        cells += [cell(by_key[(t, simulator)].avg) if (t, simulator) in by_key else "—" for t in tutors]
        if len(tutors) == 2:
            gain = paired_gain(rows, simulator, tutors[0], tutors[1])
            cells.append("—" if gain is None else ("+" if gain.mean >= 0 else "") + cell(gain))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_report(
    rows: Sequence[Mapping[str, Any]], tutors: Sequence[str], simulators: Sequence[str], judge_label: str
) -> tuple[str, dict[str, Any]]:
    """The Markdown report and its JSON summary for ``rows`` (one per dialogue, deduplicated)."""
    groups = [g for s in simulators for t in tutors if (g := group_stats(rows, t, s)) is not None]
    missing = [(t, s) for s in simulators for t in tutors if group_stats(rows, t, s) is None]
    parts = [
        "# Tutor evaluation",
        "",
        f"Scored by: {judge_label}.",
        "",
        (
            "Scores are 0-100 means over judged dialogues with 95% Student-t intervals (mean ± half-width); "
            "Avg is the mean of each dialogue's 8-dimension average; Rounds is the mean number of tutor turns. "
            "Flagged dialogues (failed episode or judgement) are excluded, never scored 0."
        ),
        "",
    ]
    for simulator in simulators:
        mine = [g for g in groups if g.simulator == simulator]
        if mine:
            parts += [
                f"## Student simulator: {SIMULATOR_TITLES.get(simulator, simulator)}",
                "",
                main_table(mine, False),
                "",
            ]
    if len(simulators) > 1:
        parts += [
            "## Cross-simulator evaluation",
            "",
            cross_simulator_table(rows, groups, tutors, simulators),
            "",
            main_table(groups, True),
            "",
        ]
    if missing:
        parts += ["Without judged dialogues: " + ", ".join(f"{t} x {s}" for t, s in missing), ""]
    summary = {
        "judge": judge_label,
        "tutors": list(tutors),
        "simulators": list(simulators),
        "groups": [g.to_dict() for g in groups],
    }
    if len(tutors) == 2:
        gains = {s: paired_gain(rows, s, tutors[0], tutors[1]) for s in simulators}
        summary["gains"] = {s: (g.to_dict() if g is not None else None) for s, g in gains.items()}
    return "\n".join(parts), summary
