"""Agreement of a judge with human labels on single tutor responses: the arithmetic, no I/O.

The procedure is fixed in docs/judge.md ("Against human teachers: MRBench"), written before any
measurement; this module computes it and nothing else:

- **the mapping** (:data:`MAPPING`): each mapped human dimension is compared with one score of ours, the
  mean of the listed criteria, each on [0, 1]; ``humanlikeness`` is not mapped and is reported as such.
- **pairwise agreement** (:func:`pairwise_agreement`): within one conversation (one row of the file:
  MRBench repeats some ``conversation_id``s, so rows, not ids, are conversations), every pair of responses
  whose human classes on the dimension differ is a comparison; the judge agrees when its score orders the
  pair as the labels do. A tie (scores equal up to :data:`TIE_TOLERANCE`) or a failed judgement of either
  response is no agreement; ties and failures are also counted apart. For Revealing_of_the_Answer only
  pairs of one "No" and one "Yes (...)" count. The share comes with a 95% Wilson interval; pairs of one
  conversation share a history, so the interval is narrower than independent pairs would make it.
- **3-class macro-F1** (:func:`choose_thresholds`, :func:`macro_f1`): two thresholds t1 <= t2 turn a score
  into a class (0 below t1, 1 from t1 to below t2, 2 from t2 on); they are chosen on the tuning
  responses (train + val) to maximise macro-F1 there, then applied unchanged to the measured ones.

Classes are the ordinal classes of :data:`pearl_verl.data.mrbench.HUMAN_DIMENSIONS` (0 worst, 2 best).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pearl_verl.data.mrbench import HUMAN_DIMENSIONS
from pearl_verl.stats import Estimate, wilson_ci

MAPPING: Mapping[str, tuple[str, ...] | None] = MappingProxyType({
    "Mistake_Identification": ("acc.feedback_correct",),
    "Mistake_Location": ("meta.discover_mistakes",),
    "Revealing_of_the_Answer": ("leak.final_answer",),
    "Providing_Guidance": ("guide.guidance_effective", "leak.hint_specificity"),
    "Actionability": ("guide.questioning", "load.clarity"),
    "Coherence": ("load.relevance",),
    "Tutor_Tone": ("emotion.encouraging_tone",),
    "humanlikeness": None,
})
"""Human dimension -> the criteria whose mean is compared with it (docs/judge.md's mapping table); None: not
mapped (no criterion of ours speaks to it). A judge may declare its own (``human_mapping``, the fitted judge's
one criterion a dimension); every mapping maps the dimensions of :data:`MAPPED`."""

MAPPED: tuple[str, ...] = tuple(d for d, criteria in MAPPING.items() if criteria)
"""The mapped human dimensions, in :data:`HUMAN_DIMENSIONS` order."""

REVEALING = "Revealing_of_the_Answer"
NOT_REVEALED = HUMAN_DIMENSIONS[REVEALING].index("No")
"""The class of "No" on Revealing_of_the_Answer; its pairs are one "No" against one "Yes (...)"."""

HUMAN_MIN_AGREEMENT = 0.5
"""Default floor of ``judge-check --human`` on each mapped dimension's pairwise agreement, set before any
measurement. A judge that orders a dimension's pairs at random agrees on half of them and one that scores
everything alike on none (ties count as no agreement), so under 50% a dimension's scores order teachers'
labels no better than a coin. It asks less than the contrast pairs' 0.75: these pairs are labelled by
people, often differ only subtly, and are judged from one turn; the paper's untuned Qwen3-32B agrees on
54.7% of its teacher-compared pairs, its finetuned judge on 82.0%."""

MEASURED_SPLITS: tuple[str, ...] = ("test",)
"""The MRBench splits measured by default (159 conversations)."""
TUNING_SPLITS: tuple[str, ...] = ("train", "val")
"""Where the macro-F1 thresholds are chosen (41 conversations, all Bridge): never a measured split."""

TIE_TOLERANCE = 1e-9
"""Scores closer than this are a tie (means of the same criterion scores computed in another order)."""

NEVER = 1.5
"""A threshold no score reaches (every score lies in [0, 1]): the class above it is never predicted."""


def mapped_score(
    scores: Mapping[str, float] | None, dimension: str, mapping: Mapping[str, tuple[str, ...] | None] = MAPPING
) -> float | None:
    """Our score for a human dimension: the mean of its criteria in ``mapping``; None for a failed judgement.

    Raises:
        KeyError: ``dimension`` is not mapped, or ``scores`` lacks one of its criteria.
    """
    criteria = mapping[dimension]
    if not criteria:
        raise KeyError(f"{dimension} is not mapped to any criterion")
    if scores is None:
        return None
    return math.fsum(scores[c] for c in criteria) / len(criteria)


@dataclass(frozen=True)
class RatedResponse:
    """One response: the conversation it answers, its human classes and the judge's mapped scores.

    Attributes:
        conversation: the conversation's identity (the row index of the file); pairs never cross it.
        classes: human dimension -> ordinal class (0 worst to 2 best) of the dimensions it is labelled on.
        scores: human dimension -> the judge's mapped score (:func:`mapped_score`); None when the judgement failed.
    """

    conversation: int
    classes: Mapping[str, int]
    scores: Mapping[str, float] | None


def is_pair(dimension: str, first: int, second: int) -> bool:
    """Whether two responses with these human classes form a comparison on ``dimension``.

    Their classes differ; on Revealing_of_the_Answer one is "No" and the other a "Yes (...)": whether a
    revealed answer was right is a question of correctness, not of leakage.
    """
    if first == second:
        return False
    if dimension == REVEALING:
        return (first == NOT_REVEALED) != (second == NOT_REVEALED)
    return True


@dataclass(frozen=True)
class PairCount:
    """Pairwise agreement on one dimension.

    Attributes:
        pairs: comparisons (pairs of responses to one conversation whose labels differ, :func:`is_pair`).
        agreed: comparisons the judge orders as the labels do.
        ties: comparisons where the judge scores both responses alike (no agreement).
        failed: comparisons with a failed judgement of either response (no agreement).
    """

    pairs: int = 0
    agreed: int = 0
    ties: int = 0
    failed: int = 0

    @property
    def estimate(self) -> Estimate | None:
        """The share agreed with its 95% Wilson interval; None without pairs."""
        return wilson_ci(self.agreed, self.pairs) if self.pairs else None


def pairwise_agreement(responses: Iterable[RatedResponse], dimension: str) -> PairCount:
    """Count the comparisons on ``dimension`` and those the judge orders as the human labels do.

    Responses not labelled on ``dimension`` take part in no pair.
    """
    by_conversation: dict[int, list[RatedResponse]] = defaultdict(list)
    for response in responses:
        if dimension in response.classes:
            by_conversation[response.conversation].append(response)
    pairs = agreed = ties = failed = 0
    for group in by_conversation.values():
        for a, b in itertools.combinations(group, 2):
            ca, cb = a.classes[dimension], b.classes[dimension]
            if not is_pair(dimension, ca, cb):
                continue
            pairs += 1
            if a.scores is None or b.scores is None:
                failed += 1
                continue
            sa, sb = a.scores[dimension], b.scores[dimension]
            if abs(sa - sb) <= TIE_TOLERANCE:
                ties += 1
            elif (sa > sb) == (ca > cb):
                agreed += 1
    return PairCount(pairs, agreed, ties, failed)


def predict_class(score: float, thresholds: tuple[float, float]) -> int:
    """0 below the first threshold, 1 from it to below the second, 2 from the second on."""
    return sum(score >= t for t in thresholds)


def macro_f1(truth: Sequence[int], predicted: Sequence[int | None]) -> float | None:
    """Macro-averaged F1 over the classes that occur in ``truth`` or ``predicted``.

    Per class F1 = 2 TP / (2 TP + FP + FN), 0 when it has no true positive (scikit-learn's ``f1_score(...,
    average="macro")`` with ``zero_division=0``). A None prediction (a failed judgement) predicts no
    class: it is a false negative of its true class and a false positive of none.

    Returns:
        The macro-F1; None for no responses.
    """
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} labels but {len(predicted)} predictions")
    if not truth:
        return None
    classes = sorted(set(truth) | {p for p in predicted if p is not None})
    f1s = []
    for c in classes:
        tp = sum(t == c and p == c for t, p in zip(truth, predicted))
        fp = sum(t != c and p == c for t, p in zip(truth, predicted))
        fn = sum(t == c and p != c for t, p in zip(truth, predicted))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return math.fsum(f1s) / len(f1s)


def candidate_thresholds(scores: Iterable[float]) -> list[float]:
    """0 (every score reaches it), the midpoints between consecutive distinct scores, and :data:`NEVER`."""
    values = sorted(set(scores))
    return sorted({0.0, *((a + b) / 2 for a, b in itertools.pairwise(values)), NEVER})


def choose_thresholds(scores: Sequence[float], truth: Sequence[int]) -> tuple[tuple[float, float], float] | None:
    """The two thresholds that maximise macro-F1 of ``scores`` against ``truth``, and that macro-F1.

    Every pair t1 <= t2 of :func:`candidate_thresholds` is tried in ascending order; the first best is kept,
    so ties go to the lower thresholds.

    Returns:
        ``((t1, t2), macro-F1)``; None for no scores.
    """
    if len(scores) != len(truth):
        raise ValueError(f"{len(scores)} scores but {len(truth)} labels")
    if not scores:
        return None
    best: tuple[tuple[float, float], float] | None = None
    candidates = candidate_thresholds(scores)
    for t1, t2 in itertools.combinations_with_replacement(candidates, 2):
        f1 = macro_f1(truth, [predict_class(s, (t1, t2)) for s in scores])
        assert f1 is not None
        if best is None or f1 > best[1]:
            best = ((t1, t2), f1)
    return best


@dataclass(frozen=True)
class DimensionAgreement:
    """Everything measured on one mapped dimension.

    Attributes:
        dimension: the human dimension.
        criteria: the criteria whose mean is compared with it.
        count: pairwise agreement on the measured responses.
        thresholds: chosen on the tuning responses; None when they hold no judged, labelled response.
        tuning_f1: macro-F1 on the tuning responses at ``thresholds``.
        tuning_responses: judged, labelled tuning responses the thresholds were chosen on.
        f1: macro-F1 on the measured responses (failed judgements count as wrong); None without thresholds.
        f1_responses: measured responses labelled on the dimension (failed judgements included).
    """

    dimension: str
    criteria: tuple[str, ...]
    count: PairCount
    thresholds: tuple[float, float] | None
    tuning_f1: float | None
    tuning_responses: int
    f1: float | None
    f1_responses: int

    def to_dict(self) -> dict[str, Any]:
        estimate = self.count.estimate
        return {
            "criteria": list(self.criteria),
            "agreement": estimate.to_dict() if estimate else None,
            "pairs": self.count.pairs,
            "agreed": self.count.agreed,
            "ties": self.count.ties,
            "failed": self.count.failed,
            "thresholds": list(self.thresholds) if self.thresholds else None,
            "tuning_macro_f1": self.tuning_f1,
            "tuning_responses": self.tuning_responses,
            "macro_f1": self.f1,
            "f1_responses": self.f1_responses,
        }


def dimension_agreement(
    dimension: str, measured: Sequence[RatedResponse], tuning: Sequence[RatedResponse],
    mapping: Mapping[str, tuple[str, ...] | None] = MAPPING,
) -> DimensionAgreement:
    """Pairwise agreement on ``measured`` and macro-F1 on ``measured`` from thresholds chosen on ``tuning``."""
    criteria = mapping[dimension]
    if not criteria:
        raise KeyError(f"{dimension} is not mapped to any criterion")
    fit = [(r.scores[dimension], r.classes[dimension]) for r in tuning
           if dimension in r.classes and r.scores is not None]
    chosen = choose_thresholds([s for s, _ in fit], [c for _, c in fit]) if fit else None
    labelled = [r for r in measured if dimension in r.classes]
    f1 = None
    if chosen is not None and labelled:
        predicted = [None if r.scores is None else predict_class(r.scores[dimension], chosen[0]) for r in labelled]
        f1 = macro_f1([r.classes[dimension] for r in labelled], predicted)
    return DimensionAgreement(
        dimension=dimension,
        criteria=criteria,
        count=pairwise_agreement(measured, dimension),
        thresholds=chosen[0] if chosen else None,
        tuning_f1=chosen[1] if chosen else None,
        tuning_responses=len(fit),
        f1=f1,
        f1_responses=len(labelled),
    )


def agreement_by_dimension(
    measured: Sequence[RatedResponse], tuning: Sequence[RatedResponse] = (),
    mapping: Mapping[str, tuple[str, ...] | None] = MAPPING,
) -> dict[str, DimensionAgreement]:
    """:func:`dimension_agreement` of every mapped dimension, in :data:`MAPPED` order."""
    return {dimension: dimension_agreement(dimension, measured, tuning, mapping) for dimension in MAPPED}


def below_floor(results: Mapping[str, DimensionAgreement], floor: float) -> list[str]:
    """The dimensions whose agreement (point estimate) is under ``floor``; a dimension with no pairs is not."""
    return [d for d, r in results.items() if r.count.estimate is not None and r.count.estimate.mean < floor]
