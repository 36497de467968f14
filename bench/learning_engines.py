"""The learning regression test's runs on each rollout engine, side by side: what it would cost the suite on vLLM.

    python bench/learning_engines.py                      # seeds 0 and 1 at once, hf then vllm
    python bench/learning_engines.py --engines vllm --seeds 1

Runs what ``tests/verl_plugin/test_main_ppo_learning_on_cpu.py`` runs (its settings, read from the test file: the
probe judge, one-token turns, 30 steps through ``recipes/pearl/run_cpu_pearl_gspo.sh``), its seeds at once as the
suite does, once per engine, one engine after the other on the same machine. For each: the wall time, the peak
resident memory of all the runs' processes together and their largest count (``bench_main_job.TreeSampler``),
and each seed's greedy held-out probe reward at step 0 and the last step. Prints a Markdown table for
BENCHMARKS.md. Nothing here gates: it is a measurement.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_main_job import TreeSampler

from pearl_verl.models.prepare import prepare_model

ROOT = Path(__file__).resolve().parents[1]
TEST = ROOT / "tests" / "verl_plugin" / "test_main_ppo_learning_on_cpu.py"


def _test_module():
    spec = importlib.util.spec_from_file_location("learning_test", TEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_engine(test, engine: str, seeds: list[int], work: Path, data: Path) -> dict:
    commands = []
    for seed in seeds:
        env = test.run_env(work, data, seed, engine)
        prepare_model("tiny", Path(env["MODEL_PATH"]), seed=seed)
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        commands.append(f"env {assignments} bash {shlex.quote(str(test.RECIPE))} "
                        f"> {shlex.quote(str(work / f'seed{seed}-{engine}.log'))} 2>&1 &")
    start = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", " ".join(commands) + " wait"], env=os.environ.copy())
    sampler = TreeSampler(proc.pid)
    proc.wait()
    sampler.stop()
    wall = time.monotonic() - start
    curves = {}
    for seed in seeds:
        out = work / f"seed{seed}-{engine}"
        curves[seed] = test.held_out(out) if (out / "metrics.jsonl").exists() else {}
    return {"engine": engine, "wall_s": round(wall), "peak_rss_gb": round(sampler.peak_gb, 1),
            "processes": sampler.peak_procs, "curves": curves, "steps": test.STEPS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="hf,vllm")
    parser.add_argument("--seeds", default="0,1")
    args = parser.parse_args()
    test = _test_module()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="pearl-learning-engines-") as tmp:
        work = Path(tmp)
        data = test.prepared_data(work)
        for engine in args.engines.split(","):
            rows.append(run_engine(test, engine, seeds, work, data))
    print("| engine | seeds at once | wall (s) | peak RSS, all runs (GiB) | processes | held-out probe reward, "
          f"step 0 -> {rows[0]['steps']} |\n|---|---|---:|---:|---:|---|")
    for r in rows:
        learned = ", ".join(f"seed {s}: {c.get(0, float('nan')):.3f} -> {c.get(r['steps'], float('nan')):.3f}"
                            for s, c in r["curves"].items())
        print(f"| {r['engine']} | {args.seeds} | {r['wall_s']} | {r['peak_rss_gb']} | {r['processes']} | {learned} |")
    print(f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
