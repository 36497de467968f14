"""verl's main_ppo on this CPU against the project's own loop (train-local), same settings, one after the other.

    python bench/bench_main_ppo.py [--steps 8] [--json out.json]

Both run the main job's RL step (tiny Qwen3-MoE, 4 MathDial problems x group 4, up to 12 tutor turns
of 24 tokens, offline student and judge, GSPO) on the same problems (``test_first64``), without
cold start or held-out evaluation. Measured per step from each one's own metrics (medians over
the steps after the first: the first one warms up), the time outside the steps (start: Ray,
workers, models; end: saving, the recipe's closing check), the wall time, and the process tree's
peak resident memory and process count (sampled every 0.5 s with psutil).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "pearl_verl" / "resources" / "data" / "mathdial" / "test_first64.jsonl"
SETTINGS = {"batch": 4, "group": 4, "turns": 12, "tokens_per_turn": 24, "prompt": 1536, "response": 1024, "lr": 2.5e-3}


class TreeSampler:
    """Peak RSS (GB) and process count of a process and its descendants."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak_gb, self.peak_procs = 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss = 0
            for proc in procs:
                try:
                    rss += proc.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
            self.peak_gb = max(self.peak_gb, rss / 2**30)
            self.peak_procs = max(self.peak_procs, len(procs))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run(command: list[str], env: dict[str, str], log: Path) -> tuple[float, TreeSampler, int]:
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        sampler = TreeSampler(proc.pid)
        code = proc.wait()
    sampler.stop()
    return time.perf_counter() - start, sampler, code


def main_ppo(work: Path, steps: int) -> dict:
    # train-local's problems and students: the file's first 32 problems (and 8 more that verl's loader
    # needs as a val set), high ability, each student starting from MathDial's misconception
    lines = PROBLEMS.read_text().splitlines(keepends=True)
    (work / "train.jsonl").write_text("".join(lines[:32]))
    (work / "val.jsonl").write_text("".join(lines[32:40]))
    data = work / "data"
    subprocess.run(["pearl-verl", "prepare-data", f"mathdial:train={work / 'train.jsonl'}",
                    f"mathdial:val={work / 'val.jsonl'}", "-o", str(data), "--ability-mix", "high=1",
                    "--misconception-rate", "1.0", "--keep-duplicates"], check=True, capture_output=True)
    s = SETTINGS
    env = {**os.environ, "OUT_DIR": str(work / "main_ppo"), "DATA_DIR": str(data), "STEPS": str(steps),
           "TRAIN_BATCH_SIZE": str(s["batch"]), "PPO_MINI_BATCH_SIZE": str(s["batch"]), "ROLLOUT_N": str(s["group"]),
           "MAX_TUTOR_TURNS": str(s["turns"]), "MAX_TOKENS_PER_TURN": str(s["tokens_per_turn"]),
           "MAX_PROMPT_LENGTH": str(s["prompt"]), "MAX_RESPONSE_LENGTH": str(s["response"]), "ACTOR_LR": str(s["lr"]),
           "SAVE_FREQ": str(steps)}  # the recipe's closing check compares the last checkpoint's weights
    wall, sampler, code = run(["bash", "recipes/pearl/run_cpu_pearl_gspo.sh"], env, work / "main_ppo.log")
    rows = [json.loads(line) for line in (work / "main_ppo" / "metrics.jsonl").read_text().splitlines()]
    steps_data = [row["data"] for row in rows if "timing_s/step" in row["data"]]
    later = steps_data[1:] or steps_data

    def median(key: str) -> float:
        return statistics.median(d.get(key, 0.0) for d in later)

    return {
        "path": "verl main_ppo (run_cpu_pearl_gspo.sh)", "exit": code, "wall_s": wall, "steps": len(steps_data),
        "startup_s": wall - sum(d["timing_s/step"] for d in steps_data),
        "step_s": median("timing_s/step"), "rollout_s": median("timing_s/gen"),
        "update_s": median("timing_s/old_log_prob") + median("timing_s/update_actor"),
        "sync_s": median("timing_s/update_weights"), "judge_s": None,
        "tokens": median("response_length/mean") * s["batch"] * s["group"],  # response tokens, as train-local counts
        "peak_gb": sampler.peak_gb, "processes": sampler.peak_procs,
    }


def train_local(work: Path, steps: int) -> dict:
    s = SETTINGS
    out = work / "train_local"
    command = [sys.executable, "-m", "pearl_verl.cli", "train-local", "--out-dir", str(out), "--steps", str(steps),
               "--cold-start-steps", "0", "--eval-problems", "0", "--batch-problems", str(s["batch"]),
               "--group-size", str(s["group"]), "--max-tutor-turns", str(s["turns"]),
               "--max-tokens-per-turn", str(s["tokens_per_turn"]), "--problems-file", str(PROBLEMS),
               "--num-problems", "32", "--lr", str(s["lr"]), "--save-every", str(steps)]
    wall, sampler, code = run(command, dict(os.environ), work / "train_local.log")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps_data = [row for row in rows if "time/update_s" in row]
    later = steps_data[1:] or steps_data

    def median(key: str) -> float:
        return statistics.median(d.get(key, 0.0) for d in later)

    step_total = [d["time/rollout_s"] + d["time/judge_s"] + d["time/update_s"] for d in steps_data]
    return {
        "path": "pearl-verl train-local", "exit": code, "wall_s": wall, "steps": len(steps_data),
        "startup_s": wall - sum(step_total), "step_s": statistics.median(step_total[1:] or step_total),
        "rollout_s": median("time/rollout_s"), "update_s": median("time/update_s"), "sync_s": None,
        "judge_s": median("time/judge_s"), "tokens": median("rollout/response_tokens"),
        "peak_gb": sampler.peak_gb, "processes": sampler.peak_procs,
    }


def markdown(results: list[dict]) -> str:
    def cell(value: object, fmt: str = "{:.2f}") -> str:
        return "-" if value is None else fmt.format(value)

    lines = ["| path | outside the steps: start, end (s) | step (s) | rollout (s) | judge (s) | update incl. old log-prob (s) "
             "| weight sync (s) | response tokens a step | wall (s) | peak RSS (GB) | processes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['path']} | {cell(r['startup_s'], '{:.0f}')} | {cell(r['step_s'])} | {cell(r['rollout_s'])} "
                     f"| {cell(r['judge_s'])} | {cell(r['update_s'])} | {cell(r['sync_s'])} | {cell(r['tokens'], '{:.0f}')} "
                     f"| {cell(r['wall_s'], '{:.0f}')} | {cell(r['peak_gb'], '{:.1f}')} | {r['processes']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work", type=Path, help="keep the runs' folders and logs here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = [train_local(work, args.steps), main_ppo(work, args.steps)]
        for r in results:
            if r["exit"] != 0:
                print(f"{r['path']} exited {r['exit']}; its log: {work}", file=sys.stderr)
    print(markdown(results))
    ratio = results[1]["step_s"] / results[0]["step_s"]
    print(f"\nmain_ppo step / train-local step: {ratio:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "step_ratio": ratio}, indent=2))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
