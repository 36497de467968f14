"""The failure guard: a run whose endpoints keep failing stops with what failed and how to resume."""

import pytest

from pearl_verl.config import load_pearl_config
from pearl_verl.failure_guard import FAILURE_RATE_KEY, FailureGuard, FailureGuardConfig, TrainingStalled


def _rates(guard, rates, first_step=1):
    for step, rate in enumerate(rates, start=first_step):
        guard.update({} if rate is None else {FAILURE_RATE_KEY: rate}, step)


def test_trips_on_the_patience_th_consecutive_failing_step_and_says_what_to_do():
    guard = FailureGuard(FailureGuardConfig(max_failure_rate=0.5, patience=3))
    _rates(guard, [1.0, 0.9])
    with pytest.raises(TrainingStalled) as stop:
        _rates(guard, [0.75], first_step=3)
    message = str(stop.value)
    assert "above 0.5 for 3 consecutive steps (steps 1-3: 1.00, 0.90, 0.75)" in message
    assert "judge endpoint" in message and "student endpoint" in message
    assert "trainer.resume_mode=auto" in message and "pearl.failure_guard" in message


def test_a_healthy_step_resets_the_count_and_a_step_without_samples_does_not():
    guard = FailureGuard(FailureGuardConfig(max_failure_rate=0.5, patience=2))
    _rates(guard, [1.0, 0.5, 1.0, 0.2, 0.9, None])  # 0.5 is not above the threshold
    with pytest.raises(TrainingStalled, match=r"steps 5-7"):
        _rates(guard, [0.8], first_step=7)


def test_patience_zero_disables_and_the_resume_hint_follows_the_entry_point():
    _rates(FailureGuard(FailureGuardConfig(patience=0)), [1.0] * 50)
    with pytest.raises(TrainingStalled, match="rerun with --resume"):
        _rates(FailureGuard(FailureGuardConfig(patience=1), resume="rerun with --resume"), [1.0])


def test_settings_live_under_the_root_pearl_section_and_are_checked():
    assert load_pearl_config(None).failure_guard == FailureGuardConfig(max_failure_rate=0.5, patience=3)
    assert load_pearl_config({"failure_guard": {"patience": 5}}).failure_guard.patience == 5
    with pytest.raises(ValueError, match=r"Did you mean pearl\.failure_guard\.patience\?"):
        load_pearl_config({"failure_guard": {"patiense": 5}})
    with pytest.raises(ValueError, match=r"max_failure_rate=1.0 must be in \[0, 1\)"):
        FailureGuardConfig(max_failure_rate=1.0)
    with pytest.raises(ValueError, match=r"patience=-1 must be >= 0"):
        FailureGuardConfig(patience=-1)
