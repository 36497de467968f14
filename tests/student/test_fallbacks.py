"""Student replies that fell back to the rules are counted the same way in simulate and eval-tutor, shown,
written to the summary, and above --max-fallback-rate the command exits 1 with a sentence that says why."""

import json

import pytest

from pearl_verl import cli
from pearl_verl.llm.local_server import LocalChatServer
from pearl_verl.student.fallbacks import FallbackRates

PROBLEMS = "pearl_verl/resources/data/gsm8k/test_first50.jsonl"
PROSE = "I think the answer is 12 because 3 times 4 is 12."  # a model that ignores the planner's JSON format


def trace(*sources):
    return [{"turn": 0}] + [{"turn": i + 1, "plan_source": p, "reply_source": r} for i, (p, r) in enumerate(sources)]


def test_only_turns_a_model_was_asked_for_count():
    rates = FallbackRates.of([trace(("fallback", "llm"), ("llm", "refined"), ("rules", "template")),
                              trace(("llm", "fallback"))])
    assert (rates.label_turns, rates.label_fallbacks, rates.message_turns, rates.message_fallbacks) == (3, 1, 3, 1)
    assert rates.label_rate == pytest.approx(1 / 3) and rates.verdict(0.5) is None
    assert rates.line() == "student replies that fell back to the rules: labels 1/3 (33%), messages 1/3 (33%)"
    offline = FallbackRates.of([trace(("rules", "template"))])
    assert offline.line() is None and offline.label_rate is None and offline.verdict(0.0) is None
    assert FallbackRates.from_dict(rates.to_dict()) == rates


def test_simulate_exits_1_when_most_replies_fell_back(tmp_path, capsys):
    out, summary = tmp_path / "turns.jsonl", tmp_path / "summary.json"
    argv = ["simulate", PROBLEMS, "--limit", "2", "--max-turns", "3", "--backend", "llm", "--model", "m",
            "--out", str(out), "--summary", str(summary)]
    with LocalChatServer(lambda body: PROSE) as server:
        assert cli.main([*argv, "--base-url", server.base_url]) == 1
        printed, err = capsys.readouterr()
        assert "student replies that fell back to the rules: labels 6/6 (100%)" in printed
        # this server held the model to the JSON Schema, and still: only a stronger model helps
        assert err.strip().splitlines()[-1] == (
            "error: 100% of the student replies fell back to the rules (above --max-fallback-rate 0.5): the student "
            "model does not follow the format even with json_schema structured output; use a stronger model")
        assert json.loads(summary.read_text())["fallbacks"]["label_rate"] == 1.0
        # the user who accepts it says so; the resumed run recounts from the file
        assert cli.main([*argv, "--base-url", server.base_url, "--max-fallback-rate", "1"]) == 0
        plain = [a if a != str(out) else str(tmp_path / "plain.jsonl") for a in argv]
        assert cli.main([*plain, "--base-url", server.base_url, "--structured-output", "none"]) == 1
        assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
            "the student model is not following the format; try --structured-output json_object or a stronger model")


def test_eval_tutor_counts_the_student_s_fallbacks_and_exits_1_above_the_bound(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["eval-tutor", PROBLEMS, "--limit", "1", "--tutor", "name=s,scripted=socratic", "--out", str(out),
            "--progress", "off", "--judge", "none", "--max-turns", "3", "--student-backend", "llm",
            "--student-model", "m"]
    with LocalChatServer(lambda body: PROSE) as server:
        assert cli.main([*argv, "--student-base-url", server.base_url]) == 1
    printed, err = capsys.readouterr()
    assert "student replies that fell back to the rules: labels 3/3 (100%)" in printed
    assert "does not follow the format even with json_schema structured output; use a stronger model" in err
    fallbacks = json.loads((out / "summary.json").read_text())["student_fallbacks"]
    assert (fallbacks["label_turns"], fallbacks["label_fallbacks"]) == (3, 3)
    assert "student replies that fell back to the rules" in (out / "report.md").read_text()
    assert cli.main(["eval-tutor", "--out", str(out), "--report-only", "--max-fallback-rate", "1"]) == 0


def test_the_structured_output_in_use_is_said_and_a_resume_must_keep_the_setting(tmp_path, capsys):
    from pearl_verl.llm.local_server import Reply

    def no_json_schema(body):
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=400, error_message="json_schema is not supported")
        return PROSE

    out = tmp_path / "turns.jsonl"
    argv = ["simulate", PROBLEMS, "--limit", "1", "--max-turns", "2", "--backend", "llm", "--model", "m",
            "--out", str(out), "--max-fallback-rate", "1"]
    with LocalChatServer(no_json_schema) as server:
        assert cli.main([*argv, "--base-url", server.base_url]) == 0
        assert "structured output: json_object (the server refused json_schema: http_400: " in capsys.readouterr().out
        assert cli.main([*argv, "--base-url", server.base_url, "--structured-output", "none"]) == 2
        assert "(settings differ: structured_output);" in capsys.readouterr().err


def test_eval_tutor_refuses_to_resume_with_another_structured_output(tmp_path, capsys):
    argv = ["eval-tutor", PROBLEMS, "--limit", "1", "--tutor", "name=s,scripted=socratic", "--out", str(tmp_path),
            "--progress", "off", "--judge", "offline", "--max-turns", "2"]
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main([*argv, "--judge-structured-output", "json_object"]) == 2
    err = capsys.readouterr().err
    assert "'structured_output': 'json_object'" in err and "(student or judge changed)" in err


def test_every_reply_falling_back_is_accepted_only_at_max_fallback_rate_1():
    from pearl_verl.student.simulate_cli import failed_run

    summary = {"dialogues": 2, "end_reasons": {"max_turns": 2}, "sources": {"reply_source": {"fallback": 1.0}}}
    assert failed_run(summary, 0.5).startswith("every student reply fell back to a template")
    assert failed_run(summary, 1.0) is None  # the help: exit 1 only above that share, and nothing is above 1
