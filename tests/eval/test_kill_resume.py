"""kill -9 during eval-tutor, then a rerun: no dialogue lost, none duplicated."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.tutor.tutor_prompts import END_MARKER


def slow_tutor(body):
    asked = sum(m["role"] == "assistant" for m in body["messages"])
    text = f"Well done. {END_MARKER}" if asked >= 2 else "What is the first step?"
    return Reply(text=text, delay_s=0.05)


def complete_lines(path):
    rows, broken = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            broken += 1
    return rows, broken


def test_kill_minus_nine_then_rerun_loses_and_duplicates_nothing(tmp_path, fx):
    out = tmp_path / "run"
    results = out / "results.jsonl"
    with LocalChatServer(slow_tutor) as server:
        argv = [
            sys.executable,
            "-m",
            "pearl_verl.eval",
            "eval-tutor",
            str(fx.GSM8K),
            "--limit",
            "12",
            "--tutor",
            f"name=endpoint,base_url={server.base_url},model=tutor",
            "--tutor",
            "name=script,scripted=socratic",
            "--judge",
            "offline",
            "--concurrency",
            "2",
            "--progress",
            "off",
            "--out",
            str(out),
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 600  # a hang guard: five results take seconds when idle, minutes when busy
        while time.monotonic() < deadline:
            if results.exists() and len(complete_lines(results)[0]) >= 5:
                break
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert process.returncode == -signal.SIGKILL
        before, _ = complete_lines(results)
        assert 5 <= len(before) < 24  # killed mid-run
        rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert rerun.returncode == 0, rerun.stderr
        assert f"{len(before)} already done, 24 planned" in rerun.stdout
    rows, broken = complete_lines(results)
    manifest = json.loads((out / "manifest.json").read_text())
    planned = {f"{t}|pearl|{item['item_id']}" for t in ("endpoint", "script") for item in manifest["items"]}
    counts = Counter(r["id"] for r in rows)
    assert set(counts) == planned  # nothing lost
    assert max(counts.values()) == 1  # nothing duplicated
    assert broken == 0  # a line the kill cut short is dropped when the run resumes
    assert all(r["judge"]["judge_ok"] == 1 for r in rows)
    assert [r["id"] for r in rows[: len(before)]] == [r["id"] for r in before]  # finished lines kept as written


def test_a_line_cut_short_is_dropped_and_its_dialogue_rerun(tmp_path, fx, run_cli):
    out = tmp_path / "run"
    args = [
        "eval-tutor",
        fx.GSM8K,
        "--limit",
        "3",
        "--tutor",
        "name=s,scripted=socratic",
        "--judge",
        "offline",
        "--out",
        out,
    ]
    assert run_cli(*args) == 0
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # a kill in the middle of a write
    assert run_cli(*args) == 0
    rows, broken = complete_lines(results)
    assert broken == 0 and len(rows) == 3 and len({r["id"] for r in rows}) == 3
    assert [r["id"] for r in rows[:2]] == [json.loads(line)["id"] for line in lines[:2]]
    assert "| s |" in (out / "report.md").read_text() and "| 3 | 0 |" in (out / "report.md").read_text()
