"""verl's vLLM rollout against pearl_verl's ``hf`` rollout through main_ppo on this CPU, side by side.

    python bench/rollout_backends.py --setting main-job --steps 3      # the main job's sizes, tiny Qwen3-MoE
    python bench/rollout_backends.py --setting smollm2 --steps 2       # SmolLM2-135M, the experiment's sizes

Each backend runs ``recipes/pearl/run_cpu_pearl_gspo.sh`` once with the same settings, one after the
other on the same machine; for each: the time to the first step (Ray, workers, the rollout server's
start), each step's split from verl's own timers (generation, old log-prob, update, weight sync),
the peak resident memory of the run's whole process tree and its largest process count
(``bench_main_job.TreeSampler``), and the wall time. Prints a Markdown table for BENCHMARKS.md and writes
``bench/results/rollout_backends_<setting>.json``. Nothing here gates: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_main_job import TreeSampler

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "pearl" / "run_cpu_pearl_gspo.sh"
SETTINGS = {
    # train-local's main job: 4 problems x 4 dialogues, 12 tutor turns of 24 tokens, the offline judge
    "main-job": {"TUTOR": "tiny", "TRAIN_BATCH_SIZE": "4", "PPO_MINI_BATCH_SIZE": "4", "ROLLOUT_N": "4",
                 "MAX_TUTOR_TURNS": "12", "MAX_TOKENS_PER_TURN": "24", "ACTOR_LR": "2.5e-3"},
    # docs/experiments/smollm2_cpu_main_ppo: 2 problems x 4 dialogues, 6 tutor turns of 24 tokens
    "smollm2": {"TUTOR": "smollm2", "TRAIN_BATCH_SIZE": "2", "PPO_MINI_BATCH_SIZE": "2", "ROLLOUT_N": "4",
                "MAX_TUTOR_TURNS": "6", "MAX_TOKENS_PER_TURN": "24", "ACTOR_LR": "2e-5"},
}
PHASES = ("gen", "old_log_prob", "update_actor", "update_weights", "step")


def run_backend(backend: str, setting: str, steps: int, work: Path) -> dict:
    out = work / backend
    env = {**os.environ, **SETTINGS[setting], "ROLLOUT_NAME": backend, "STEPS": str(steps), "SAVE_FREQ": "-1",
           "OUT_DIR": str(out), "MODEL_PATH": str(work / f"model-{setting}"), "DATA_DIR": str(work / "data"),
           "JUDGE_BACKEND": "offline", "SEED": "0"}
    start = time.monotonic()
    proc = subprocess.Popen(["bash", str(RECIPE)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    sampler = TreeSampler(proc.pid)
    first_step_at = None
    log = []
    for line in proc.stdout:
        log.append(line)
        if first_step_at is None and "Training Progress:   0%" in line:
            first_step_at = time.monotonic() - start
    proc.wait()
    sampler.stop()
    wall = time.monotonic() - start
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()] \
        if (out / "metrics.jsonl").exists() else []
    steps_data = [row["data"] for row in rows if "timing_s/step" in row["data"]]
    if len(steps_data) != steps:
        sys.exit(f"{backend}: {len(steps_data)} of {steps} steps logged; the end of its output:\n" + "".join(log[-40:]))
    split = {phase: [round(d.get(f"timing_s/{phase}", 0.0), 2) for d in steps_data] for phase in PHASES}
    return {"backend": backend, "wall_s": round(wall, 1), "start_s": round(first_step_at or float("nan"), 1),
            "steps": split, "peak_rss_gb": round(sampler.peak_gb, 2), "processes": sampler.peak_procs,
            "probs_diff_max": [d.get("training/rollout_probs_diff_max") for d in steps_data]}


def prepare(setting: str, work: Path) -> None:
    model = work / f"model-{setting}"
    # one model for both backends: the tiny one (heads of 32, which vLLM's CPU attention needs)
    subprocess.run([sys.executable, "-m", "pearl_verl.verl_plugin.smoke", "model", str(model), "--kind",
                    SETTINGS[setting]["TUTOR"]], check=True, capture_output=True)
    subprocess.run(["pearl-verl", "prepare-data", "mathdial=@fixture", "-o", str(work / "data"),
                    "--conditions-per-problem", "2"], check=True, capture_output=True)


def table(results: list[dict]) -> str:
    def later(values: list[float]) -> str:  # steps after the first: the first carries the engines' warm-up
        rest = values[1:] or values
        return f"{statistics.mean(rest):.1f}"

    lines = ["| rollout | start (s) | step 1 (s) | later steps (s) | gen | old log-prob | update | sync | "
             "peak RSS (GiB) | processes | wall (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        s = r["steps"]
        lines.append(f"| {r['backend']} | {r['start_s']:.0f} | {s['step'][0]:.1f} | {later(s['step'])} | "
                     f"{later(s['gen'])} | {later(s['old_log_prob'])} | {later(s['update_actor'])} | "
                     f"{later(s['update_weights'])} | {r['peak_rss_gb']:.1f} | {r['processes']} | "
                     f"{r['wall_s']:.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="main-job")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--backends", default="hf,vllm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pearl-rollout-bench-") as tmp:
        work = Path(tmp)
        prepare(args.setting, work)
        results = [run_backend(backend, args.setting, args.steps, work) for backend in args.backends.split(",")]
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    report = {"setting": args.setting, "settings": SETTINGS[args.setting], "steps": args.steps, "machine": machine,
              "results": results}
    target = ROOT / "bench" / "results" / f"rollout_backends_{args.setting}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2))
    print(table(results))
    print(f"({args.setting}, {args.steps} steps, {machine}; step split: mean of the steps after the first; {target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
