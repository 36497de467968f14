"""The main job (``pearl-verl train-local``, through verl's main_ppo) stage by stage: where its time and memory go.

    python bench/bench_main_job.py [--steps N] [--json out.json] [-- train-local flags]

Runs ``pearl-verl train-local`` (default settings unless flags follow ``--``) and reports from its own
``metrics.jsonl``: the cold start, each held-out evaluation (verl's validation, as ``pearl_sync`` times it), the
time outside verl's steps and those evaluations (Ray, TransferQueue, the workers, the models; the summary), the
median step and its parts as verl times them (rollout with the streamed judge, old log-prob, update, weight sync),
the wall time, and the process tree's peak resident memory and process count (sampled every 0.5 s with psutil).
verl's V1 trainer (``pearl_sync``) times a step without the validation that may follow it (``timing_s/step`` holds
the rollout, update, weight sync and checkpoint; ``timing_s/testing`` the validation, apart).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from pearl_verl.train_local.local_config import LocalTrainConfig


class TreeSampler:
    """Peak memory (GB) and process count of a process and its descendants.

    ``peak_gb`` sums each process's resident set (RSS), so pages that processes share (torch's libraries, mapped in
    every Ray worker) count once per process; ``peak_pss_gb`` sums the proportional set size (PSS: each shared page
    split among the processes that map it, read every 5 s), the tree's share of the machine's memory.
    """

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak_gb, self.peak_pss_gb, self.peak_procs = 0.0, 0.0, 0
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss = pss = 0
            # PSS walks each process's page tables (smaps_rollup): every 10th sample, so the sampler stays light
            with_pss, self._samples = self._samples % 10 == 0, self._samples + 1
            for proc in procs:
                try:
                    rss += proc.memory_info().rss
                    pss += proc.memory_full_info().pss if with_pss else 0
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak_gb = max(self.peak_gb, rss / 2**30)
            self.peak_pss_gb = max(self.peak_pss_gb, pss / 2**30)
            self.peak_procs = max(self.peak_procs, len(procs))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def measure(out: Path, steps: int, flags: list[str]) -> dict:
    command = [sys.executable, "-m", "pearl_verl.cli", "train-local", "--out-dir", str(out), "--steps", str(steps), *flags]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = TreeSampler(proc.pid)
    code = proc.wait()
    sampler.stop()
    wall = time.perf_counter() - start
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [row for row in rows if "timing_s/step" in row]
    later = train[1:] or train

    def median(key: str) -> float:
        return statistics.median(row.get(key, 0.0) for row in later)

    evals = [row.get("time/eval_s") or 0.0 for row in rows if "eval/reward/mean" in row]
    cold = sum(row.get("time/cold_start_s", 0.0) for row in rows)
    stepped = sum(row["timing_s/step"] for row in train)
    return {
        "exit": code, "wall_s": wall, "steps": len(train), "cold_start_s": cold, "evals_s": evals,
        "outside_s": wall - cold - sum(evals) - stepped, "first_step_s": train[0]["timing_s/step"] if train else None,
        "step_s": median("timing_s/step"), "rollout_s": median("timing_s/gen"),
        "old_log_prob_s": median("timing_s/old_log_prob"), "update_s": median("timing_s/update_actor"),
        "sync_s": median("timing_s/update_weights"), "peak_gb": sampler.peak_gb, "processes": sampler.peak_procs,
    }


def markdown(r: dict) -> str:
    evals = " + ".join(f"{e:.0f}" for e in r["evals_s"]) or "-"
    return "\n".join([
        "| wall (s) | cold start (s) | held-out evaluations (s) | verl outside the steps: Ray start, workers, end (s) "
        "| first step (s) | step, median of the rest (s) | rollout incl. judge (s) | old log-prob (s) | update (s) "
        "| weight sync (s) | peak RSS (GB) | processes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {r['wall_s']:.0f} | {r['cold_start_s']:.0f} | {evals} | {r['outside_s']:.0f} | {r['first_step_s']:.1f} "
        f"| {r['step_s']:.2f} | {r['rollout_s']:.2f} | {r['old_log_prob_s']:.2f} | {r['update_s']:.2f} | {r['sync_s']:.2f} "
        f"| {r['peak_gb']:.1f} | {r['processes']} |",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=LocalTrainConfig.steps, help="training steps (default: the main job's)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work", type=Path, help="keep the run's folder here (default: a temporary folder)")
    parser.add_argument("flags", nargs="*", help="train-local flags, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = (args.work or Path(tmp)) / "train_local"
        result = measure(out, args.steps, args.flags)
        if result["exit"] != 0:
            print(f"train-local exited {result['exit']}; its log: {out / 'train.log'}", file=sys.stderr)
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result["exit"]


if __name__ == "__main__":
    sys.exit(main())
