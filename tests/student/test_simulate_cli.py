"""``pearl-verl simulate``: file formats, per-turn rows, ability protocol, errors."""

import argparse
import json

import pandas as pd
import pytest

from pearl_verl.student import simulate_cli
from pearl_verl.student.simulate import load_problems, make_jobs, problem_from_row, sample_profile


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

    assert _run(str(data_dir / "gsm8k" / "test.jsonl"), "--limit", "2", "--tutor", "leaking", "--out", str(out)) == 0
    assert any(json.loads(line)["solved"] for line in out.read_text().splitlines())


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
