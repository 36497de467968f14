"""The failure guard: a run whose endpoints keep failing stops with what failed and how to resume."""

import pytest

from pearl_verl.advantage.failure_guard import (
    CAUSE_KEYS,
    FAILURE_RATE_KEY,
    HTTP_STATUS_KEY,
    PARSE_FAILURE_RATE_KEY,
    FailureGuard,
    FailureGuardConfig,
    TrainingStalled,
    failure_cause_metrics,
)
from pearl_verl.pearl_config import load_pearl_config


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
    with pytest.raises(ValueError, match=r"pearl\.failure_guard\.max_failure_rate=1.0: a finite number at least 0 and less than 1 \(at 1 it could never trip\)"):
        FailureGuardConfig(max_failure_rate=1.0)
    with pytest.raises(ValueError, match=r"pearl\.failure_guard\.patience=-1: a whole number from 0 to 1,000,000,000 \(0 disables the guard\)"):
        FailureGuardConfig(patience=-1)


def test_cause_metrics_split_flagged_dialogues_by_what_failed():
    reasons = ["student_error", "student_error", "tutor_error", "turn_limit", None, "tutor_ended", "student_error"]
    judge_ok = [0, 0, 0, 0, 0, 1, 0]
    padding = [False] * 6 + [True]  # verl's padding row is left out
    got = failure_cause_metrics(reasons, judge_ok, padding)
    assert got == {CAUSE_KEYS["student"]: 2 / 6, CAUSE_KEYS["tutor"]: 1 / 6, CAUSE_KEYS["judge"]: 2 / 6}
    assert sum(failure_cause_metrics(["tutor_ended"] * 2, [None, 1]).values()) == 0  # a missing judge_ok is 1
    assert failure_cause_metrics(["student_error"], [0], [True]) == {}


def test_message_names_what_failed_largest_first():
    guard = FailureGuard(FailureGuardConfig(max_failure_rate=0.5, patience=2))
    step = {FAILURE_RATE_KEY: 0.9, CAUSE_KEYS["student"]: 0.8, CAUSE_KEYS["judge"]: 0.1, CAUSE_KEYS["tutor"]: 0.0}
    guard.update(step, 4)
    with pytest.raises(TrainingStalled) as stop:
        guard.update({**step, CAUSE_KEYS["student"]: 0.6, CAUSE_KEYS["judge"]: 0.3}, 5)
    message = str(stop.value)
    assert "What failed, as a mean share of dialogues over these steps: the student endpoint" in message
    assert message.index("student endpoint") < message.index("judge endpoint")
    assert ": 0.70; the judge endpoint" in message and ": 0.20." in message
    assert "tutor" not in message.split("What failed")[1].split("Fix it")[0]  # a cause that never failed is left out


def test_message_names_the_endpoints_url_and_its_http_status_where_the_run_knows_them():
    guard = FailureGuard(FailureGuardConfig(patience=2), endpoints={"judge": "http://judge:8000/v1", "student": None})
    guard.update({FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["judge"]: 1.0, HTTP_STATUS_KEY: 503.0}, 2)
    with pytest.raises(TrainingStalled) as stop:
        guard.update({FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["judge"]: 1.0, HTTP_STATUS_KEY: 401.0}, 3)
    message = str(stop.value)
    assert "the judge endpoint (reward.reward_kwargs.base_url=http://judge:8000/v1; `pearl-verl doctor`" in message
    assert "The judge endpoint answered HTTP 401." in message  # the last step's
    guard = FailureGuard(FailureGuardConfig(patience=1))
    with pytest.raises(TrainingStalled) as stop:  # refused connections: no status to name, none invented
        guard.update({FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["judge"]: 1.0}, 1)
    assert "HTTP" not in str(stop.value)


def test_a_judge_that_answers_in_the_wrong_form_is_told_from_one_that_is_down():
    weak = {FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["judge"]: 1.0, PARSE_FAILURE_RATE_KEY: 0.9}
    down = {FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["judge"]: 1.0}  # no reply came back: no parse rate
    messages = {}
    for name, step in (("weak", weak), ("down", down)):
        guard = FailureGuard(FailureGuardConfig(max_failure_rate=0.5, patience=2))
        guard.update(step, 1)
        with pytest.raises(TrainingStalled) as stop:
            guard.update(step, 2)
        messages[name] = str(stop.value)
    assert "90% of the judge's replies did not parse (pearl/judge/parse_failure_rate)" in messages["weak"]
    assert "judge-check" in messages["weak"]
    assert "did not parse" not in messages["down"]
    student = {FAILURE_RATE_KEY: 1.0, CAUSE_KEYS["student"]: 1.0, PARSE_FAILURE_RATE_KEY: 0.9}
    guard = FailureGuard(FailureGuardConfig(max_failure_rate=0.5, patience=1))
    with pytest.raises(TrainingStalled) as stop:
        guard.update(student, 1)
    assert "did not parse" not in str(stop.value)  # the judge is not what failed
