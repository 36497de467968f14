"""gen-sft end to end: offline runs give a valid SFT file; a kill -9 and a rerun give exactly the
dialogues of an uninterrupted run; failures are recorded and retried; a judge added later judges only."""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from pearl_verl.sft.dataset import RECORDS_NAME, SUMMARY_NAME, read_records
from pearl_verl.sft.generate import load_samples, make_jobs
from pearl_verl.tutor.tutor_prompts import END_MARKER

CLI = (
    "import argparse, sys\n"
    "from pearl_verl.sft import gen_cli\n"
    "parser = argparse.ArgumentParser()\n"
    "gen_cli.register(parser.add_subparsers())\n"
    "args = parser.parse_args(['gen-sft', *sys.argv[1:]])\n"
    "sys.exit(args.handler(args))\n"
)


def _complete_lines(path):
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    ids = []
    for line in lines:
        try:
            ids.append(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError):
            continue
    return ids


def _dialogues(out):
    records, _ = read_records(out / RECORDS_NAME)
    return {key: record["episode"] for key, record in records.items()}


def test_offline_backends_produce_a_valid_sft_file(prepared, run_gen_sft, tmp_path, capsys):
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from pearl_verl.models.tiny import build_offline_tokenizer

    out = tmp_path / "sft"
    argv = [prepared, "-o", out, "--teacher", "scripted", "--judge-backend", "offline", "--samples-per-row", "2"]
    argv += ["--limit", "40"]
    assert run_gen_sft(*argv, "--val-fraction", "0.2", "--no-progress") == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / SUMMARY_NAME).read_text())
    jobs = 2 * 40
    assert summary["jobs"] == summary["dialogues"] == jobs and summary["missing"] == 0
    assert summary["kept"] + sum(summary["dropped"].values()) == jobs and summary["kept"] > jobs // 2
    assert summary["judge_means"] and summary["run"]["generated"] == jobs
    assert "note: scripted teacher (a test double)" in printed and "tutor turns, kept" in printed
    train, val = pd.read_parquet(out / "train.parquet"), pd.read_parquet(out / "val.parquet")
    assert len(train) + len(val) == summary["kept"] and not set(train["problem_id"]) & set(val["problem_id"])
    for messages in train["messages"]:
        roles = [m["role"] for m in messages]
        assert roles[0] == "system" and roles[1:] == ["user", "assistant"] * (len(roles) // 2)
    ended = train[train["end_reason"] == "tutor_ended"]
    assert all(m[-1]["content"].endswith(END_MARKER) for m in ended["messages"])
    tokenizer = build_offline_tokenizer(tmp_path / "tok")
    config = {"max_length": 16384, "pad_mode": "no_padding"}
    dataset = MultiTurnSFTDataset(str(out / "train.parquet"), tokenizer, config)
    for index in range(0, len(dataset), 17):
        item = dataset[index]
        assert 0 < int(item["loss_mask"].sum()) < len(item["input_ids"])


def test_concurrency_does_not_change_the_dialogues(prepared, run_gen_sft, tmp_path):
    for concurrency in (1, 8):
        argv = [prepared, "-o", tmp_path / f"c{concurrency}", "--teacher", "scripted", "--limit", "12"]
        assert run_gen_sft(*argv, "--concurrency", concurrency, "--no-progress") == 0
    assert _dialogues(tmp_path / "c1") == _dialogues(tmp_path / "c8")
    assert (tmp_path / "c1" / "train.parquet").read_bytes() == (tmp_path / "c8" / "train.parquet").read_bytes()


def test_kill_9_mid_run_and_a_rerun_give_exactly_the_uninterrupted_dialogues(
    prepared, run_gen_sft, teacher_server, tmp_path
):
    fast, slow = teacher_server(), teacher_server(delay_s=0.03)
    common = ["--teacher-model", "teacher", "--limit", "20", "--samples-per-row", "2", "--concurrency", "4"]
    common.append("--no-progress")
    reference = tmp_path / "reference"
    assert run_gen_sft(prepared, "-o", reference, "--teacher-base-url", fast.base_url, *common) == 0

    killed = tmp_path / "killed"
    argv = [str(prepared), "-o", str(killed), "--teacher-base-url", slow.base_url, *common]
    proc = subprocess.Popen([sys.executable, "-c", CLI, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(_complete_lines(killed / RECORDS_NAME)) < 8:
        assert proc.poll() is None and time.monotonic() < deadline, "gen-sft ended before it could be killed"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    done_before = _complete_lines(killed / RECORDS_NAME)
    assert 8 <= len(done_before) < 40 and not (killed / "train.parquet").exists()
    assert slow.max_in_flight >= 2  # dialogues really ran concurrently

    assert run_gen_sft(prepared, "-o", killed, "--teacher-base-url", fast.base_url, *common) == 0
    after = _complete_lines(killed / RECORDS_NAME)
    assert sorted(after) == sorted(set(after)) and len(after) == 40  # nothing lost, nothing generated twice
    assert after[: len(done_before)] == done_before  # the first run's dialogues were kept, not redone
    assert _dialogues(killed) == _dialogues(reference)
    resumed, uninterrupted = pd.read_parquet(killed / "train.parquet"), pd.read_parquet(reference / "train.parquet")
    pd.testing.assert_frame_equal(resumed, uninterrupted)
    summary = json.loads((killed / SUMMARY_NAME).read_text())
    assert summary["run"]["resumed"] == len(done_before) and summary["run"]["generated"] == 40 - len(done_before)


def test_backend_failures_are_recorded_flagged_and_retried(prepared, run_gen_sft, teacher_server, tmp_path, capsys):
    broken = teacher_server(fail_when=lambda problem: "ducks" in problem.question)
    out = tmp_path / "sft"
    common = ["--teacher-model", "teacher", "--limit", "4", "--no-progress"]
    assert run_gen_sft(prepared, "-o", out, "--teacher-base-url", broken.base_url, *common) == 0
    assert "1 dialogue(s) ended in a backend failure; --retry-failed" in capsys.readouterr().out
    summary = json.loads((out / SUMMARY_NAME).read_text())
    assert summary["dropped"]["backend_failure"] == 1 and summary["end_reasons"]["tutor_error"] == 1
    assert run_gen_sft(prepared, "-o", out, "--teacher-base-url", broken.base_url, *common) == 0
    assert json.loads((out / SUMMARY_NAME).read_text())["run"]["resumed"] == 4  # not retried unless asked
    healthy = teacher_server()
    assert run_gen_sft(prepared, "-o", out, "--teacher-base-url", healthy.base_url, *common, "--retry-failed") == 0
    summary = json.loads((out / SUMMARY_NAME).read_text())
    assert summary["run"]["generated"] == 1 and "tutor_error" not in summary["end_reasons"]
    assert summary["dropped"]["backend_failure"] == 0


def test_a_judge_added_on_a_rerun_judges_without_regenerating(prepared, run_gen_sft, tmp_path):
    out = tmp_path / "sft"
    assert run_gen_sft(prepared, "-o", out, "--teacher", "scripted", "--limit", "6", "--no-progress") == 0
    before = _dialogues(out)
    argv = [prepared, "-o", out, "--teacher", "scripted", "--limit", "6", "--judge-backend", "offline"]
    assert run_gen_sft(*argv, "--judge-min-score", "0.99", "--no-progress") == 1  # every dialogue filtered out
    summary = json.loads((out / SUMMARY_NAME).read_text())
    assert summary["run"]["judged_only"] == 6 and summary["run"]["generated"] == 0
    assert _dialogues(out) == before and summary["judge_means"]
    records, _ = read_records(out / RECORDS_NAME)
    assert all(r["judge"] is not None and "judge_ok" in r["judge"] for r in records.values())
    assert summary["dropped"]["judge_low_score"] + summary["dropped"]["judge_incomplete"] > 0


def test_the_length_filter_uses_the_trainers_tokenizer(prepared, run_gen_sft, tmp_path, capsys):
    from pearl_verl.models.tiny import build_offline_tokenizer

    build_offline_tokenizer(tmp_path / "tok")
    argv = [prepared, "-o", tmp_path / "sft", "--teacher", "scripted", "--limit", "6", "--no-progress"]
    assert run_gen_sft(*argv, "--tokenizer", tmp_path / "tok", "--max-length", "50") == 1  # an empty set fails
    summary = json.loads((tmp_path / "sft" / SUMMARY_NAME).read_text())
    assert summary["kept"] == 0 and summary["dropped"]["too_long"] > 0
    assert "error: no dialogue was kept, so the SFT files are empty (dropped: " in capsys.readouterr().err


def test_input_and_argument_errors(prepared, run_gen_sft, tmp_path):
    with pytest.raises(ValueError, match=r"missing.parquet: prepared data \(from `pearl-verl prepare-data`\) does not exist"):
        load_samples([tmp_path / "missing.parquet"])
    other = tmp_path / "other.parquet"
    pd.DataFrame([{"messages": []}]).to_parquet(other)
    with pytest.raises(ValueError, match="lacks column\\(s\\) \\['extra_info', 'prompt'\\]"):
        load_samples([other])
    with pytest.raises(ValueError, match="repeats: two input rows share a problem and condition seed"):
        make_jobs(load_samples([prepared, prepared]))
    with pytest.raises(ValueError, match="needs --teacher-base-url and --teacher-model"):
        run_gen_sft(prepared, "-o", tmp_path / "x", "--limit", "1")
    with pytest.raises(ValueError, match="--tokenizer and --max-length go together"):
        run_gen_sft(prepared, "-o", tmp_path / "x", "--teacher", "scripted", "--max-length", "10")


def test_a_student_model_that_falls_back_fails_the_run(prepared, run_gen_sft, tmp_path, capsys):
    from pearl_verl.llm.local_server import LocalChatServer

    out = tmp_path / "sft"
    argv = [prepared, "-o", out, "--teacher", "scripted", "--limit", "2", "--no-progress", "--student-backend", "llm",
            "--student-model", "m", "--max-turns", "3"]
    with LocalChatServer(lambda body: "I think it is 12, since 3 times 4 is 12.") as server:  # prose, not the JSON asked
        assert run_gen_sft(*argv, "--student-base-url", server.base_url) == 1
    printed, err = capsys.readouterr()
    assert "student replies that fell back to the rules: labels " in printed
    assert "student structured output: json_schema" in printed  # the mode auto found (this server takes any)
    assert "fell back to the rules (above --max-fallback-rate 0.5)" in err
    assert "even with json_schema structured output; use a stronger model" in err  # the server held it to the schema
    fallbacks = json.loads((out / SUMMARY_NAME).read_text())["student_fallbacks"]
    assert fallbacks["label_turns"] > 0 and fallbacks["label_rate"] == 1.0
    assert json.loads((out / SUMMARY_NAME).read_text())["structured_output"] == {
        "student": "structured output: json_schema"}


def test_a_rerun_with_another_student_setting_is_refused_before_any_dialogue(prepared, run_gen_sft, tmp_path):
    out = tmp_path / "sft"
    argv = [prepared, "-o", out, "--teacher", "scripted", "--limit", "2", "--no-progress"]
    assert run_gen_sft(*argv) == 0
    recorded = (out / RECORDS_NAME).read_text()
    settings = json.loads((out / "generation_settings.json").read_text())
    assert settings["student_structured_output"] == "auto" and settings["teacher"] == "scripted"
    with pytest.raises(ValueError, match=r"holds another run's dialogues \(settings differ: max_turns, "
                                         r"student_structured_output\); pick another --out-dir"):
        run_gen_sft(*argv, "--student-structured-output", "json_object", "--max-turns", "4")
    assert (out / RECORDS_NAME).read_text() == recorded  # refused before anything was appended
    assert run_gen_sft(*argv, "--judge-backend", "offline") == 0  # a gate judge may be added on a rerun
    (out / "generation_settings.json").unlink()  # a folder an earlier version wrote: taken as this run's
    assert run_gen_sft(*argv) == 0 and (out / "generation_settings.json").exists()
