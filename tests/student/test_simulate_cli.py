"""``pearl-verl simulate``: file formats, per-turn rows, ability protocol, errors."""

import argparse
import json

import pandas as pd
import pytest

from pearl_verl.data.problem_files import load_problems, problem_from_row
from pearl_verl.student import simulate_cli
from pearl_verl.student.simulation_runs import make_jobs, sample_profile


def _run(*argv):
    parser = argparse.ArgumentParser()
    simulate_cli.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", *argv])
    return args.handler(args)


def test_row_formats():
    gsm = problem_from_row({"question": "2+2?", "answer": "2+2=<<2+2=4>>4\n#### 4"}, 3, "gsm8k-test")
    assert (
        gsm.problem.problem_id == "gsm8k-test-0003"
        and gsm.problem.answer == "4"
        and gsm.problem.reference_solution == "2+2=4"
    )
    math = problem_from_row({"problem": "x?", "solution": "So $\\boxed{5}$."}, 0, "m")
    assert math.problem.answer == "5"
    dial = problem_from_row(
        {"qid": 7, "question": "q", "ground_truth": "1+1=2\n 2", "student_incorrect_solution": "1+1=3"}, 0, "d"
    )
    assert dial.problem.problem_id == "mathdial-7" and dial.misconception == "1+1=3"
    own = problem_from_row({"problem_id": "p", "question": "q", "answer": "1", "reference_solution": "r"}, 0, "x")
    assert own.problem.problem_id == "p"
    verl = problem_from_row({"prompt": "...", "extra_info": {"problem": own.problem.to_dict()}}, 0, "x")
    assert verl.problem == own.problem
    with pytest.raises(ValueError, match=r"keys \['text'\]"):
        problem_from_row({"text": "hi"}, 0, "x")


def test_parquet_and_jobs(tmp_path, data_dir):
    rows = [json.loads(line) for line in (data_dir / "gsm8k" / "test.jsonl").read_text().splitlines()[:4]]
    pd.DataFrame(rows).to_parquet(tmp_path / "g.parquet")
    items = load_problems(tmp_path / "g.parquet")
    assert len(items) == 4 and items[0].problem.answer == "18"
    jobs = make_jobs(items, "all", seed=1)
    assert [j.condition.profile.ability for j in jobs] == ["low"] * 4 + ["medium"] * 4 + ["high"] * 4
    assert make_jobs(items, "all", seed=1) == jobs and make_jobs(items, "all", seed=2) != jobs
    with pytest.raises(ValueError, match="ability='genius'"):
        make_jobs(items, "genius", 0)
    import random

    assert sample_profile("high", random.Random(0)).ability == "high"


def test_command_writes_one_row_per_student_turn(tmp_path, data_dir, capsys):
    out = tmp_path / "turns.jsonl"
    assert _run(str(data_dir / "gsm8k" / "test.jsonl"), "--limit", "5", "--ability", "all", "--out", str(out)) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({r["dialogue"] for r in rows}) == 15
    first = [r for r in rows if r["dialogue"] == 0]
    assert [r["turn"] for r in first] == list(range(len(first))) and first[0]["tutor_message"] is None
    assert first[1]["tutor_message"].startswith("Let's work through this together")
    assert all(
        r["attempt"] in ("correct", "partial", "incorrect", "none") and isinstance(r["mastery"], dict) for r in rows
    )
    printed = capsys.readouterr().out
    assert "ability low" in printed and "ability high" in printed and "LLM calls 0" in printed

    leaking, source = tmp_path / "leaking.jsonl", str(data_dir / "gsm8k" / "test.jsonl")
    assert _run(source, "--limit", "2", "--tutor", "leaking", "--out", str(leaking)) == 0
    assert any(json.loads(line)["solved"] for line in leaking.read_text().splitlines())


def test_a_killed_run_resumes_the_dialogues_it_had_not_written(tmp_path, data_dir, monkeypatch, capsys):
    from pearl_verl.student import simulation_runs

    source = str(data_dir / "gsm8k" / "test.jsonl")
    fresh, killed = tmp_path / "fresh.jsonl", tmp_path / "killed.jsonl"
    assert _run(source, "--limit", "4", "--seed", "3", "--out", str(fresh)) == 0
    fresh_summary = capsys.readouterr().out
    lines = fresh.read_text().splitlines(keepends=True)
    by_dialogue = {}
    for line in lines:
        by_dialogue.setdefault(json.loads(line)["dialogue"], []).append(line)
    assert all(len(rows) == json.loads(rows[0])["dialogue_rows"] for rows in by_dialogue.values())
    # a kill: dialogues 0 and 1 written, dialogue 2 cut after its first row and inside its second
    kept = by_dialogue[0] + by_dialogue[1] + by_dialogue[2][:1] + [by_dialogue[2][1][:15]]
    killed.write_text("".join(kept))
    (tmp_path / "killed.jsonl.settings.json").write_text((tmp_path / "fresh.jsonl.settings.json").read_text())

    ran = []
    real = simulation_runs.run_jobs

    def counting(simulator, tutor, jobs, *args, **kwargs):
        ran.extend(job.index for job in jobs)
        return real(simulator, tutor, jobs, *args, **kwargs)

    monkeypatch.setattr(simulation_runs, "run_jobs", counting)
    assert _run(source, "--limit", "4", "--seed", "3", "--out", str(killed)) == 0
    assert sorted(ran) == [2, 3]  # dialogues 0 and 1 were kept, not run again
    rows = sorted(killed.read_text().splitlines())
    assert rows == sorted(fresh.read_text().splitlines())  # the offline student is deterministic
    assert capsys.readouterr().out == fresh_summary  # the summary counts the kept dialogues too

    ran.clear()
    assert _run(source, "--limit", "4", "--seed", "3", "--out", str(killed)) == 0
    assert ran == [] and sorted(killed.read_text().splitlines()) == rows


def test_a_rerun_with_other_settings_is_refused_before_any_dialogue(tmp_path, data_dir):
    source, out = str(data_dir / "gsm8k" / "test.jsonl"), tmp_path / "turns.jsonl"
    assert _run(source, "--limit", "2", "--out", str(out)) == 0
    before = out.read_text()
    with pytest.raises(ValueError, match=r"holds another run's dialogues \(settings differ: seed, tutor\)"):
        _run(source, "--limit", "2", "--tutor", "leaking", "--seed", "1", "--out", str(out))
    assert out.read_text() == before
    out.write_text(before + '{"not": "a turn row"}\n')
    with pytest.raises(ValueError, match=r"turns.jsonl:\d+: not a simulate turn row"):
        _run(source, "--limit", "2", "--out", str(out))


def test_command_errors(data_dir):
    with pytest.raises(ValueError, match="--tutor endpoint needs --tutor-base-url"):
        _run(str(data_dir / "gsm8k" / "test.jsonl"), "--limit", "1", "--tutor", "endpoint")
    with pytest.raises(ValueError, match="need an endpoint"):
        _run(str(data_dir / "gsm8k" / "test.jsonl"), "--limit", "1", "--backend", "llm")


def test_an_empty_problem_file_is_an_error(tmp_path, capsys):
    """Like ``eval-tutor``: no problems is a usage error (exit 2, one line), not an empty report."""
    from pearl_verl import cli

    source, out = tmp_path / "empty.jsonl", tmp_path / "turns.jsonl"
    source.write_text("")
    code = cli.main(["simulate", str(source), "--out", str(out)], modules=("pearl_verl.student.simulate_cli",))
    assert code == 2 and capsys.readouterr().err == f"error: no problems in {[str(source)]}.\n"
    assert not out.exists()


def test_a_tutor_endpoint_gets_a_token_cap_timeout_and_retries(tmp_path, data_dir):
    from pearl_verl.llm.local_server import LocalChatServer

    seen = []

    def respond(request):
        seen.append(request)
        return "What do you get for the first step?"

    out, default = tmp_path / "turns.jsonl", tmp_path / "default.jsonl"
    with LocalChatServer(respond, model="tutor") as server:
        endpoint = ["--limit", "1", "--max-turns", "2", "--tutor", "endpoint", "--tutor-base-url", server.base_url,
                    "--tutor-model", "tutor", "--timeout", "5"]
        source = str(data_dir / "gsm8k" / "test.jsonl")
        assert _run(source, *endpoint, "--tutor-max-tokens", "300", "--out", str(out)) == 0
        assert _run(source, *endpoint, "--out", str(default)) == 0
    assert len(seen) == 4 and all(request["model"] == "tutor" for request in seen)
    assert [request["max_tokens"] for request in seen] == [300, 300] + [simulate_cli.TUTOR_MAX_TOKENS] * 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["tutor_message"] == "What do you get for the first step?"


def test_every_reply_falling_back_is_a_failed_run_and_the_summary_says_so(tmp_path, data_dir, capsys):
    from pearl_verl.llm.local_server import LocalChatServer

    # a server whose replies never parse: an empty plan, an empty message (as a weak model's can be)
    out, source = tmp_path / "turns.jsonl", str(data_dir / "gsm8k" / "test.jsonl")
    with LocalChatServer(lambda request: "", model="student") as server:
        code = _run(source, "--limit", "2", "--max-turns", "2", "--backend", "llm", "--base-url", server.base_url,
                    "--model", "student", "--out", str(out))
    captured = capsys.readouterr()
    assert code == 1 and "every student reply fell back to a template" in captured.err
    assert "messages from fallback 100.0%" in captured.out and "labels from fallback" in captured.out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    replies = [r for r in rows if r["turn"] > 0]
    assert replies and {r["reply_source"] for r in replies} == {"fallback"}

    offline = tmp_path / "offline.jsonl"
    assert _run(source, "--limit", "2", "--max-turns", "2", "--out", str(offline)) == 0
    assert "labels from rules 100.0% | messages from template 100.0%" in capsys.readouterr().out
