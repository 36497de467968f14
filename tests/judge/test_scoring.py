"""Completion gate and dimension means (paper §3.2), and self-consistency aggregation."""

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.parser import parse_judgement
from pearl_verl.judge.rubric import RUBRIC, Criterion, Rubric
from pearl_verl.judge.scoring import aggregate_samples, completion_gate, gated_dimension_scores, result_from_samples


def test_dimension_score_is_the_mean_of_gated_criteria(make_output):
    scores = parse_judgement(make_output({"leak.final_answer": 0, "leak.key_steps": 1, "complete.conclusion": 1}))
    result = result_from_samples([scores])
    assert result.ok and result.gate == 1
    # leak: (0 + 0.5 + 1) / 3; complete: (1 + 1 + 1 + 0.5) / 4; the others at their top score.
    assert result.dims["leak"] == pytest.approx(0.5)
    assert result.dims["complete"] == pytest.approx(0.875)
    assert all(result.dims[d] == 1.0 for d in DIMENSIONS if d not in ("leak", "complete"))


def test_gate_zero_zeroes_every_dimension_but_keeps_ungated_criteria(make_output):
    scores = parse_judgement(make_output({"complete.session_complete": 0}))
    result = result_from_samples([scores])
    assert result.gate == 0 and all(v == 0.0 for v in result.dims.values())
    assert sum(c.score for c in result.criteria) == len(RUBRIC) - 1  # r^_kj kept, only r_kj gated


def test_aggregation_mean_and_median_and_gate_majority(make_output):
    a = parse_judgement(make_output({"leak.final_answer": 0}))
    b = parse_judgement(make_output({"leak.final_answer": 2}))
    c = parse_judgement(make_output({"leak.final_answer": 2, "complete.session_complete": 0}))
    mean = aggregate_samples([a, b, c], "mean")
    median = aggregate_samples([a, b, c], "median")
    index = RUBRIC.criteria.index(RUBRIC.by_id("leak.final_answer"))
    assert mean[index].score == pytest.approx(2 / 3) and mean[index].raw == 1
    assert median[index].score == 1.0 and median[index].raw == 2
    assert completion_gate(mean) == 1  # 2 of 3 samples say complete
    assert completion_gate(aggregate_samples([b, c], "mean")) == 0  # a tie is incomplete
    assert completion_gate(aggregate_samples([b, c], "median")) == 0


def test_rationale_follows_the_aggregate(make_output):
    a = parse_judgement(make_output({"meta.reflection": 0}, rationale="first reading"))
    b = parse_judgement(make_output({"meta.reflection": 2}, rationale="second reading"))
    c = parse_judgement(make_output({"meta.reflection": 2}, rationale="third reading"))
    agg = aggregate_samples([a, b, c], "median")
    assert agg[RUBRIC.criteria.index(RUBRIC.by_id("meta.reflection"))].rationale == "second reading (reflection)"


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="at least one"):
        aggregate_samples([], "mean")
    with pytest.raises(ValueError, match="aggregate='mode'"):
        aggregate_samples([()], "mode")
    with pytest.raises(ValueError, match="gate=2"):
        gated_dimension_scores((), 2)
    with pytest.raises(ValueError, match="lack the completion gate"):
        completion_gate(())


def test_rubric_invariants_and_validation():
    assert len(RUBRIC) == 24 and RUBRIC.gate.id == "complete.session_complete"
    assert all(RUBRIC.for_dimension(d) for d in DIMENSIONS)
    assert all(c.normalise(c.low) == 0.0 and c.normalise(c.high) == 1.0 for c in RUBRIC)
    with pytest.raises(ValueError, match="ascending"):
        Criterion("acc", "x", "d", ((2, "a"), (0, "b")))
    with pytest.raises(ValueError, match="dimension='style'"):
        Criterion("style", "x", "d", ((0, "a"), (1, "b")))
    without_emotion = tuple(c for c in RUBRIC if c.dimension != "emotion")
    with pytest.raises(ValueError, match=r"no criterion for dimension\(s\) \['emotion'\]"):
        Rubric(without_emotion, RUBRIC.gate)
