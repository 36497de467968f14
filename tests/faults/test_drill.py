"""The fault suite: 512 episodes of rollout + judging + advantage at 20% faults (issue 8, item 2).

One drill (fixed seed) runs for the module; each must-show item is one test, asserting both the
drill's own numbers and the matching check of :mod:`pearl_verl.faults.checks`. The checks are in
turn shown to catch each kind of violation on a deliberately corrupted copy of the report.
"""

import dataclasses
import json

import pytest

from pearl_verl.dialogue.episode import END_REASONS
from pearl_verl.dims import DIMENSIONS
from pearl_verl.faults import checks
from pearl_verl.faults.drill import DrillConfig, run_drill
from pearl_verl.faults.drill_report import markdown, summarize
from pearl_verl.faults.plan import FAULT_KINDS, FaultKind, Injection
from pearl_verl.faults.recording import CallRecord

CONFIG = DrillConfig(groups=64, group_size=8, fault_rate=0.2, seed=0)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return run_drill(CONFIG, tmp_path_factory.mktemp("drill"))


@pytest.fixture(scope="module")
def summary(report):
    return summarize(report)


def test_faults_are_injected_at_the_configured_rate_in_every_kind(summary):
    student, judge = summary["student"], summary["judge_resumed"]
    assert student["requests"] > 4000 and student["fault_share"] == pytest.approx(0.2, abs=0.02)
    assert all(count >= 60 for count in student["by_kind"].values()), student["by_kind"]
    assert judge["requests"] >= 300 and judge["fault_share"] == pytest.approx(0.2, abs=0.06)
    assert sum(count > 0 for count in judge["by_kind"].values()) >= 7, judge["by_kind"]  # ~9 of each expected
    assert student["retries"] > 600 and judge["retries"] > 30  # the client absorbed most faults


def test_the_batch_completes(report, summary):
    assert checks.check_complete(report) == []
    assert len(report.episodes) == len(report.rows) == len(report.advantages) == 512
    assert set(summary["end_reasons"]) <= set(END_REASONS)
    assert summary["end_reasons"].get("student_error", 0) >= 5  # some students failed for good...
    assert summary["end_reasons"].get("tutor_ended", 0) >= 200  # ...and most episodes ran normally


def test_every_sample_is_scored_or_flagged(report, summary):
    assert checks.check_scored_or_flagged(report) == []
    assert summary["scored"] + summary["flagged_failed_episode"] + summary["flagged_judge_failure"] == 512
    assert summary["scored"] >= 440 and summary["flagged_failed_episode"] >= 5 and summary["flagged_judge_failure"] >= 1
    for row in report.rows.values():
        assert row["judge_ok"] in (0, 1)
        if row["judge_ok"] == 0:
            assert all(row[d] == 0.0 for d in DIMENSIONS) and row["completed"] == 0


def test_flagged_samples_get_exactly_zero_advantage(report):
    assert checks.check_flagged_zero_advantage(report) == []
    flagged = [a for a, v in zip(report.advantages, report.valid, strict=True) if not v]
    scored = [a for a, v in zip(report.advantages, report.valid, strict=True) if v]
    assert len(flagged) >= 6 and all(a == 0.0 for a in flagged)
    assert sum(a != 0.0 for a in scored) > 0.8 * len(scored)  # the scored ones do get a signal


def test_retries_stay_within_their_bounds(report, summary):
    assert checks.check_retry_bounds(report) == []
    assert summary["student"]["max_attempts"] == 1 + CONFIG.student_max_retries  # reached, never exceeded
    assert summary["judge_resumed"]["max_attempts"] == 1 + CONFIG.judge_max_retries
    assert summary["student"]["failed_calls"] >= 5


def test_outcomes_match_the_injected_faults(report):
    assert checks.check_outcomes_match_injections(report) == []


def test_no_result_already_computed_is_lost(report, summary):
    assert checks.check_no_lost_results(report) == []
    killed = summary["killed_run"]
    assert killed["killed"] and CONFIG.kill_after <= killed["rows_before_kill"] < 512
    assert summary["resumed"]["skipped"] == killed["rows_before_kill"]
    assert summary["resumed"]["judged"] == 512 - killed["rows_before_kill"]


def test_the_markdown_report_holds_the_numbers(report, summary):
    text = markdown(summary, checks.run_checks(report))
    assert "512 episodes (64 groups x 8)" in text and "| check_no_lost_results | 0 |" in text
    assert all(f"| {kind} |" in text for kind in FAULT_KINDS)
    json.dumps(summary)  # plain data, for --json


# ---- the checks catch violations (each on a corrupted copy of the report) ----


def _flagged_id(report):
    return next(e.id for e, v in zip(report.episodes, report.valid, strict=True) if not v)


def _scored_id(report):
    return next(e.id for e, v in zip(report.episodes, report.valid, strict=True) if v)


def test_check_complete_catches_a_missing_result(report):
    rows = dict(report.rows)
    rows.pop(report.episodes[7].id)
    assert "result rows missing" in checks.check_complete(dataclasses.replace(report, rows=rows))[0]
    twice = dataclasses.replace(report, lines=(*report.lines, report.lines[-1]))
    assert "more than one result line" in checks.check_complete(twice)[0]


def test_check_scored_or_flagged_catches_invented_and_altered_scores(report):
    flagged, scored = _flagged_id(report), _scored_id(report)
    invented = {**report.rows, flagged: {**report.rows[flagged], "judge_ok": 1, "error": None}}
    assert checks.check_scored_or_flagged(dataclasses.replace(report, rows=invented))
    altered = {**report.rows, scored: {**report.rows[scored], "acc": 1.0 - report.rows[scored]["acc"]}}
    problems = checks.check_scored_or_flagged(dataclasses.replace(report, rows=altered))
    assert "differ from the judge's answer" in problems[0]
    placeholder = {**report.rows, flagged: {**report.rows[flagged], "meta": 0.5}}
    problems = checks.check_scored_or_flagged(dataclasses.replace(report, rows=placeholder))
    assert "flagged with dimensions ['meta']" in problems[0]


def test_check_flagged_zero_advantage_catches_a_flagged_sample_with_advantage(report):
    index = report.valid.index(False)
    advantages = list(report.advantages)
    advantages[index] = 0.25
    problems = checks.check_flagged_zero_advantage(dataclasses.replace(report, advantages=tuple(advantages)))
    assert problems == [f"{report.episodes[index].id}: flagged but advantage 0.25"]
    shifted = tuple(a + 0.1 if v else a for a, v in zip(report.advantages, report.valid, strict=True))
    problems = checks.check_flagged_zero_advantage(dataclasses.replace(report, advantages=shifted))
    assert "changed the advantages" in problems[0]


def test_check_retry_bounds_catches_extra_attempts_and_requests(report):
    call = report.student_calls[0]
    greedy = dataclasses.replace(call, attempts=2 + CONFIG.student_max_retries)
    problems = checks.check_retry_bounds(dataclasses.replace(report, student_calls=(greedy, *report.student_calls[1:])))
    assert any("made 4 attempts; bound 3" in p for p in problems)
    extra = tuple(Injection(10**6 + k, call.fingerprint, 99 + k, None) for k in range(3))
    more = dataclasses.replace(report, student_injections=report.student_injections + extra)
    problems = checks.check_retry_bounds(more)
    assert any("student server saw" in p and call.fingerprint in p for p in problems)
    quitter = next(c for c in report.student_calls if not c.ok)
    early = dataclasses.replace(quitter, attempts=1)
    calls = tuple(early if c is quitter else c for c in report.student_calls)
    problems = checks.check_retry_bounds(dataclasses.replace(report, student_calls=calls))
    assert any("gave up after 1 < 3" in p for p in problems)


def test_check_outcomes_catches_a_failure_without_faults(report):
    errored = next(e for e in report.episodes if e.record.end_reason == "student_error")
    calls = tuple(c for c in report.student_calls if c.ok or c.tag != errored.id)
    problems = checks.check_outcomes_match_injections(dataclasses.replace(report, student_calls=calls))
    assert any(p.startswith(f"{errored.id}: end_reason=student_error") for p in problems)
    healthy = next(c for c in report.student_calls if c.ok and c.attempts == 1)
    invented = CallRecord(healthy.tag, healthy.fingerprint, healthy.attempts, False, "timeout")
    calls = tuple(invented if c is healthy else c for c in report.student_calls)
    assert checks.check_outcomes_match_injections(dataclasses.replace(report, student_calls=calls))


def test_check_no_lost_results_catches_a_lost_line_and_a_rejudged_id(report):
    key, line = next(iter(report.killed_run.lines.items()))
    lost = dataclasses.replace(report, lines=tuple(x for x in report.lines if x != line))
    assert any("gone or changed" in p for p in checks.check_no_lost_results(lost))
    rejudged = {**report.rows, key: {**report.rows[key], "judge_latency_s": 123.0}}
    assert any("judged again" in p for p in checks.check_no_lost_results(dataclasses.replace(report, rows=rejudged)))
    not_killed = dataclasses.replace(report, killed_run=dataclasses.replace(report.killed_run, killed=False))
    assert "was not killed mid-way" in checks.check_no_lost_results(not_killed)[0]


def test_invalid_drill_settings_are_rejected():
    with pytest.raises(ValueError, match=r"kill_after=512 must lie in \[1, 512\)"):
        DrillConfig(kill_after=512)
    with pytest.raises(ValueError, match="need >= 1 group of >= 2 episodes"):
        DrillConfig(group_size=1)
    with pytest.raises(ValueError, match=r"fault_rate=1.5 must lie in \[0, 1\]"):
        DrillConfig(fault_rate=1.5)


def _served(*kinds):
    return {"f": [Injection(index=i, fingerprint="f", occurrence=i, kind=kind) for i, kind in enumerate(kinds)]}


def test_an_answer_the_client_timed_out_on_is_a_timeout_and_nothing_else_is():
    """Under load the server's empty answer can arrive after the client's timeout: the retry's text is right."""
    bound = 1 + CONFIG.student_max_retries
    late = CallRecord("e0", "f", 2, True, text="I think it is 4", failed_attempts=("timeout",))
    assert checks._student_calls_match([late], _served(FaultKind.EMPTY_CONTENT, None), bound) == []
    # without the client's word for it, the same record contradicts the plan
    unexplained = dataclasses.replace(late, failed_attempts=("bad_response",))
    assert "text 'I think it is 4', injected FaultKind.EMPTY_CONTENT" in checks._student_calls_match(
        [unexplained], _served(FaultKind.EMPTY_CONTENT, None), bound)[0]
    # an empty answer the client did read must stay empty
    read = CallRecord("e0", "f", 1, True, text="I think it is 4")
    assert checks._student_calls_match([read], _served(FaultKind.EMPTY_CONTENT), bound)
