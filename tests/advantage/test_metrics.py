"""Advantage-step metrics: what is counted, and what is left out."""

import pytest
import torch

from pearl_verl.advantage.estimator import compute_pearl_advantage_breakdown
from pearl_verl.advantage.inputs import PearlInputs
from pearl_verl.advantage.metrics import advantage_metrics


def _inputs(valid, padding=None):
    scores = torch.tensor([[0.9, 0.1], [0.5, 0.3], [0.1, 0.5], [0.7, 0.7]], dtype=torch.float64)
    return PearlInputs(
        dim_scores=scores,
        num_turns=torch.tensor([2.0, 4.0, 6.0, 8.0]),
        completed=torch.tensor([True, True, False, True]),
        valid=torch.tensor(valid),
        padding=None if padding is None else torch.tensor(padding),
    )


def _metrics(inputs):
    bd = compute_pearl_advantage_breakdown(
        inputs.dim_scores, inputs.num_turns, inputs.completed, ["g", "g", "g", "h"], valid=inputs.valid, gamma=1.0
    )
    return advantage_metrics(inputs, bd, ("acc", "leak")), bd


def test_values():
    metrics, bd = _metrics(_inputs([True, True, False, True]))
    assert metrics["pearl/judge/failure_rate"] == pytest.approx(0.25)
    assert metrics["pearl/episode/completed_rate"] == pytest.approx(0.75)
    assert metrics["pearl/episode/tutor_turns/mean"] == pytest.approx(5.0)
    assert metrics["pearl/reward/acc/mean"] == pytest.approx((0.9 + 0.5 + 0.7) / 3)
    assert metrics["pearl/reward/leak/shaped_mean"] == pytest.approx((0.1 + 0.3 + 0.7) / 3)
    assert metrics["pearl/advantage/groups_without_contrast"] == 1.0  # group h has one member
    assert metrics["pearl/advantage/max"] == pytest.approx(bd.advantages.max().item())
    assert metrics["pearl/advantage/nonzero_frac"] == pytest.approx(2 / 3)


def test_padding_rows_are_left_out():
    metrics, _ = _metrics(_inputs([True, True, True, False], padding=[False, False, False, True]))
    assert metrics["pearl/judge/failure_rate"] == 0.0
    assert metrics["pearl/episode/tutor_turns/mean"] == pytest.approx(4.0)


def test_no_scored_sample_reports_only_counts():
    metrics, _ = _metrics(_inputs([False] * 4))
    assert metrics["pearl/judge/failure_rate"] == 1.0
    assert not any(key.startswith("pearl/reward/") or key == "pearl/advantage/mean" for key in metrics)


def test_student_fallback_rate_counts_replies_whose_labels_or_message_fell_back():
    from pearl_verl.advantage.metrics import FALLBACK_RATE_KEY, fallback_counts, student_fallback_metrics
    from pearl_verl.dialogue.student_contract import StudentTurnState

    def state(plan, reply):
        return StudentTurnState(1, (), "none", {}, plan_source=plan, reply_source=reply)

    opening = StudentTurnState(0, (), "none", {})
    trace = [opening, state("llm", "llm"), state("fallback", "llm"), state("llm", "fallback"), state("rules", "refined")]
    counts = fallback_counts(trace)
    assert counts == {"pearl_student_replies": 4, "pearl_student_fallbacks": 2}
    other = fallback_counts([opening, state("llm", "llm")])
    assert student_fallback_metrics([counts, None, other]) == {FALLBACK_RATE_KEY: 2 / 5}
    assert student_fallback_metrics([None, fallback_counts([opening])]) == {}  # no reply: no rate, not 0
