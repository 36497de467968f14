"""From criterion scores to the judge's result: self-consistency aggregation and the completion gate.

Paper §3.2: each criterion j of dimension k gives a discrete score r^_kj; the completion
indicator g in {0, 1} comes from the completion dimension and gates every criterion,
r_kj = r^_kj * g; a dimension's score is the mean of its gated criteria (mapped to [0, 1]).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import CriterionScore, JudgeResult
from pearl_verl.judge.rubric import RUBRIC, Rubric

AGGREGATES: tuple[str, ...] = ("mean", "median")


def completion_gate(criteria: Sequence[CriterionScore], rubric: Rubric = RUBRIC) -> int:
    """g: 1 when the gate criterion's score exceeds 0.5 (for one sample: it is 1), else 0.

    Over aggregated samples this is a strict majority: a tie between complete and incomplete
    counts as incomplete, since incomplete trajectories must not earn positive rewards.

    Raises:
        InputError: when ``criteria`` lack the gate criterion.
    """
    gate = rubric.gate
    for score in criteria:
        if (score.dimension, score.criterion) == (gate.dimension, gate.key):
            return int(score.score > 0.5)
    raise InputError(f"criteria lack the completion gate {gate.id}")


def gated_dimension_scores(criteria: Sequence[CriterionScore], gate: int) -> dict[str, float]:
    """Per dimension, the mean of its criterion scores times g (r_kj = r^_kj * g), in [0, 1].

    Raises:
        InputError: when a dimension has no criterion score.
    """
    if gate not in (0, 1):
        raise InputError(f"gate={gate!r} must be 0 or 1.")
    dims: dict[str, float] = {}
    for dimension in DIMENSIONS:
        values = [score.score * gate for score in criteria if score.dimension == dimension]
        if not values:
            raise InputError(f"no criterion score for dimension {dimension!r}")
        dims[dimension] = sum(values) / len(values)
    return dims


def aggregate_samples(
    samples: Sequence[Sequence[CriterionScore]], how: str = "mean", rubric: Rubric = RUBRIC
) -> tuple[CriterionScore, ...]:
    """Self-consistency: one score per criterion from several parsed judgements.

    Args:
        samples: parsed judgements, each with every rubric criterion in rubric order.
        how: ``mean`` or ``median`` of the normalised scores.
        rubric: gives each criterion's scale.

    Returns:
        Criterion scores whose ``score`` is the aggregate in [0, 1] and whose ``raw`` is that
        aggregate rounded to the criterion's scale; the rationale is the first sample's whose raw
        score equals it (else the first sample's).

    Raises:
        InputError: for no samples, an unknown ``how``, or samples that disagree on the criteria.
    """
    if how not in AGGREGATES:
        raise InputError(f"aggregate={how!r} must be one of {AGGREGATES}.")
    if not samples:
        raise InputError("aggregate_samples needs at least one parsed sample")
    if len(samples) == 1:
        return tuple(samples[0])
    reduce = statistics.fmean if how == "mean" else statistics.median
    out: list[CriterionScore] = []
    for position, criterion in enumerate(rubric):
        column = [sample[position] for sample in samples]
        if any((s.dimension, s.criterion) != (criterion.dimension, criterion.key) for s in column):
            raise InputError(f"samples disagree on the criterion at position {position} ({criterion.id})")
        score = float(reduce([s.score for s in column]))
        raw = round(criterion.low + score * (criterion.high - criterion.low))
        rationale = next((s.rationale for s in column if s.raw == raw), column[0].rationale)
        out.append(CriterionScore(criterion.dimension, criterion.key, raw, score, rationale))
    return tuple(out)


def result_from_samples(
    samples: Sequence[Sequence[CriterionScore]],
    how: str = "mean",
    rubric: Rubric = RUBRIC,
    attempts: int = 0,
    latency_s: float = 0.0,
) -> JudgeResult:
    """The judge's result from one or more parsed judgements: aggregate, gate, dimension means."""
    criteria = aggregate_samples(samples, how, rubric)
    gate = completion_gate(criteria, rubric)
    return JudgeResult(
        ok=True,
        dims=gated_dimension_scores(criteria, gate),
        gate=gate,
        criteria=criteria,
        attempts=attempts,
        latency_s=latency_s,
    )
