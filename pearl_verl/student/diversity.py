"""The paper's behavioural-diversity statistics over labelled student turns (pure functions).

Input: labelled turns (one attempt outcome + a set of behaviour labels), grouped by dialogue where
order matters. The opening turn, which only presents the problem, is excluded by the caller, as in
the paper. Definitions (p = empirical distribution):

- attempt distribution: share of turns per attempt outcome.
- label frequency: share of turns carrying a label (labels are non-exclusive; shares need not sum to 1).
- label coverage: number of taxonomy labels occurring at least once (reported as ``k/13``).
- labels >= 1%: number of labels whose frequency is at least 1%.
- mean labels per turn: average size of a turn's label set.
- attempt entropy: Shannon entropy of the attempt distribution divided by ``log |ATTEMPT_OUTCOMES|``
  (= log 4), so it lies in [0, 1] and does not depend on the log base. The paper's 65.7/25.3/4.5/4.5
  distribution gives 0.651.
- unique label sets: number of distinct label sets, the empty set included.
- label-set entropy: Shannon entropy, in bits (log base 2), of the distribution over label sets.
- transition entropy: conditional entropy H(X_{t+1} | X_t), in bits, of consecutive turns in the same
  dialogue, where X is the attempt outcome by default (the label set with ``state="label_set"``):
  ``-sum_{a,b} p(a, b) log2 p(b | a)`` over all within-dialogue transitions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pearl_verl.dialogue.student_contract import ATTEMPT_OUTCOMES
from pearl_verl.errors import InputError
from pearl_verl.student.taxonomy import BEHAVIOURS


@dataclass(frozen=True)
class LabelledTurn:
    """One student turn's labels.

    Attributes:
        attempt: one of :data:`ATTEMPT_OUTCOMES`.
        labels: behaviour labels (any strings; statistics that need a taxonomy take one).
    """

    attempt: str
    labels: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.attempt not in ATTEMPT_OUTCOMES:
            raise InputError(f"attempt={self.attempt!r} must be one of {list(ATTEMPT_OUTCOMES)}.")
        object.__setattr__(self, "labels", frozenset(self.labels))


def _nonempty(turns: Sequence[LabelledTurn]) -> Sequence[LabelledTurn]:
    if not turns:
        raise InputError("Diversity statistics need at least one labelled turn; got none.")
    return turns


def _shannon(counts: Iterable[int], base: float) -> float:
    counts = [c for c in counts if c > 0]
    total = sum(counts)
    return -sum(c / total * math.log(c / total, base) for c in counts) if total else 0.0


def attempt_distribution(turns: Sequence[LabelledTurn]) -> dict[str, float]:
    """Share of turns per attempt outcome, in :data:`ATTEMPT_OUTCOMES` order (sums to 1)."""
    counts = Counter(t.attempt for t in _nonempty(turns))
    return {outcome: counts[outcome] / len(turns) for outcome in ATTEMPT_OUTCOMES}


def label_frequencies(turns: Sequence[LabelledTurn], taxonomy: Sequence[str] = BEHAVIOURS) -> dict[str, float]:
    """Share of turns carrying each taxonomy label."""
    counts = Counter(label for t in _nonempty(turns) for label in t.labels)
    return {label: counts[label] / len(turns) for label in taxonomy}


def label_coverage(turns: Sequence[LabelledTurn], taxonomy: Sequence[str] = BEHAVIOURS) -> int:
    """How many taxonomy labels occur at least once."""
    seen = {label for t in turns for label in t.labels}
    return sum(label in seen for label in taxonomy)


def labels_at_least(
    turns: Sequence[LabelledTurn], threshold: float = 0.01, taxonomy: Sequence[str] = BEHAVIOURS
) -> int:
    """How many taxonomy labels have a frequency of at least ``threshold`` (default 1%)."""
    return sum(freq >= threshold for freq in label_frequencies(turns, taxonomy).values())


def mean_labels_per_turn(turns: Sequence[LabelledTurn]) -> float:
    """Average number of behaviour labels per turn."""
    return sum(len(t.labels) for t in _nonempty(turns)) / len(turns)


def attempt_entropy(turns: Sequence[LabelledTurn]) -> float:
    """Shannon entropy of the attempt distribution normalised by log 4, in [0, 1]."""
    counts = Counter(t.attempt for t in _nonempty(turns))
    return _shannon(counts.values(), math.e) / math.log(len(ATTEMPT_OUTCOMES))


def unique_label_sets(turns: Sequence[LabelledTurn]) -> int:
    """Number of distinct label sets (the empty set counts as one)."""
    return len({t.labels for t in turns})


def label_set_entropy(turns: Sequence[LabelledTurn]) -> float:
    """Shannon entropy in bits of the distribution over label sets."""
    return _shannon(Counter(t.labels for t in _nonempty(turns)).values(), 2)


def transition_entropy(dialogues: Sequence[Sequence[LabelledTurn]], state: str = "attempt") -> float:
    """Conditional entropy H(X_{t+1} | X_t) in bits over within-dialogue transitions.

    Args:
        dialogues: each dialogue's labelled turns in order.
        state: ``attempt`` (X = attempt outcome) or ``label_set`` (X = the turn's label set).

    Raises:
        InputError: for an unknown ``state`` or when no dialogue has two turns.
    """
    if state not in ("attempt", "label_set"):
        raise InputError(f"state={state!r} must be 'attempt' or 'label_set'.")

    def key(turn: LabelledTurn) -> Hashable:
        return turn.attempt if state == "attempt" else turn.labels

    pairs = Counter((key(a), key(b)) for turns in dialogues for a, b in zip(turns, turns[1:]))
    if not pairs:
        raise InputError("Transition entropy needs at least one dialogue with two or more labelled turns.")
    sources = Counter()
    for (a, _), n in pairs.items():
        sources[a] += n
    total = sum(pairs.values())
    return -sum(n / total * math.log2(n / sources[a]) for (a, _), n in pairs.items())


@dataclass(frozen=True)
class DiversityReport:
    """All statistics of one simulator run (the paper's Tables 5-7 columns)."""

    turns: int
    dialogues: int
    attempt_distribution: dict[str, float]
    label_frequencies: dict[str, float]
    label_coverage: int
    taxonomy_size: int
    labels_at_least_1pct: int
    mean_labels: float
    attempt_entropy: float
    unique_label_sets: int
    label_set_entropy: float
    transition_entropy: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def diversity_report(
    dialogues: Sequence[Sequence[LabelledTurn]], taxonomy: Sequence[str] = BEHAVIOURS
) -> DiversityReport:
    """Every statistic over ``dialogues`` (turns pooled; transitions within each dialogue)."""
    turns = [turn for dialogue in dialogues for turn in dialogue]
    has_pairs = any(len(d) > 1 for d in dialogues)
    return DiversityReport(
        turns=len(turns),
        dialogues=len(dialogues),
        attempt_distribution=attempt_distribution(turns),
        label_frequencies=label_frequencies(turns, taxonomy),
        label_coverage=label_coverage(turns, taxonomy),
        taxonomy_size=len(taxonomy),
        labels_at_least_1pct=labels_at_least(turns, 0.01, taxonomy),
        mean_labels=mean_labels_per_turn(turns),
        attempt_entropy=attempt_entropy(turns),
        unique_label_sets=unique_label_sets(turns),
        label_set_entropy=label_set_entropy(turns),
        transition_entropy=transition_entropy(dialogues) if has_pairs else None,
    )


def format_report(report: DiversityReport) -> str:
    """A plain-text table of a report, for the command line."""
    lines = [
        f"turns {report.turns} in {report.dialogues} dialogues (opening turns excluded)",
        "attempts: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in report.attempt_distribution.items()),
        f"label coverage {report.label_coverage}/{report.taxonomy_size} | labels >= 1% {report.labels_at_least_1pct}"
        f" | mean labels {report.mean_labels:.3f} | attempt entropy {report.attempt_entropy:.3f}",
        f"unique label sets {report.unique_label_sets} | label-set entropy {report.label_set_entropy:.3f} bits"
        + ("" if report.transition_entropy is None else f" | transition entropy {report.transition_entropy:.3f} bits"),
        "label frequencies: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in report.label_frequencies.items()),
    ]
    return "\n".join(lines)
