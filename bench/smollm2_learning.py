"""Does a real language model learn to teach here? SmolLM2-135M-Instruct through ``pearl-verl train-local``, per seed.

    python bench/smollm2_learning.py                          # seeds 0, 1 and 2, one after the other
    python bench/smollm2_learning.py --seeds 0 --control base # the base model with the tutoring prompt, untrained
    python bench/smollm2_learning.py --seeds 0 --control sign # PEARL's advantages with their sign flipped
    python bench/smollm2_learning.py --seeds 0 -- --steps 30  # train-local flags after --
    python bench/smollm2_learning.py --seeds 0 --setting turns10 -- --max-tutor-turns 10  # other flags, own rows

Each run is ``pearl-verl train-local --model smollm2 --seed N`` in ``--runs/<control>-seed-N`` (resumed when its
folder holds a checkpoint), alone on the machine as far as this script knows; the script samples the memory of the
run's whole process tree (``bench_main_job.TreeSampler``: ``peak_gb`` is the summed PSS, each shared page counted
once; ``peak_rss_sum_gb`` the summed RSS, which counts torch's libraries once per Ray worker). Then it reads the run's
held-out evaluations: the gain from the evaluation where RL starts to the last (mean, paired 95% interval), the spread
of the first evaluation's eval-seed means, and the teaching moves of :mod:`pearl_verl.train_local.moves` at both (the
stock lines being the cold start's teacher turns). Controls: ``base`` evaluates SmolLM2 with the tutoring prompt and
no training (no cold start, one RL step; its first evaluation is the one reported); ``sign`` trains with PEARL's
advantages negated (``bench/pearl_sabotage.py``), which must not gain. Each run's row replaces the row of the same
seed and control in ``bench/results/smollm2_learning.json``, written after every run; ``--setting NAME`` labels rows
(and folders, ``--runs/NAME-<control>-seed-N``) of flags other than the defaults, so a probe keeps the defaults' rows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from bench_main_job import TreeSampler

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "smollm2_learning.json"
CONTROLS = {"none": [], "base": ["--cold-start-steps", "0", "--steps", "1"], "sign": []}


def machine() -> str:
    """The CPU as a number beside it needs saying: model, cores, and the instructions its kernels use."""
    info = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    isa = "AMX" if "amx_bf16" in flags else "AVX512-BF16" if "avx512_bf16" in flags else \
        "AVX-512" if "avx512f" in flags else "AVX2"
    kernels = os.environ.get("ATEN_CPU_CAPABILITY")
    return f"{model}, {os.cpu_count()} cores, {isa}" + (f" (torch kernels {kernels})" if kernels else "")


def run(seed: int, control: str, folder: Path, extra: list[str]) -> tuple[int, TreeSampler, float, list[str]]:
    """One train-local run; returns its exit code, its memory sampler (peaks), minutes, and the command."""
    command = ["pearl-verl", "train-local", "--model", "smollm2", "--seed", str(seed), "--out-dir", str(folder),
               *CONTROLS[control], *extra, *(["--resume"] if (folder / "checkpoints").is_dir() else [])]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if control == "sign":
        env.update(PEARL_SABOTAGE="sign", VERL_USE_EXTERNAL_MODULES="pearl_sabotage",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(BENCH), env.get("PYTHONPATH", "")])))
    print(f"seed {seed}, control {control}: {' '.join(command)}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=env)
    memory = TreeSampler(proc.pid)  # bench_main_job's: the peak memory of the run's process tree (PSS and RSS)
    code = proc.wait()
    memory.stop()
    return code, memory, (time.monotonic() - start) / 60, command


def stock_lines(folder: Path) -> list[str]:
    """The cold start's teacher turns (the assistant messages of its SFT set), the fixed lines a tutor could copy."""
    parquet = folder / "cold_start" / "train.parquet"
    if not parquet.exists():
        return []
    import pandas as pd

    return [m["content"] for chat in pd.read_parquet(parquet)["messages"] for m in chat if m["role"] == "assistant"]


def read_run(folder: Path, control: str) -> dict[str, Any]:
    """The run's numbers (see the module docstring)."""
    with warnings.catch_warnings():  # verl's engines warn on import about every engine not installed
        warnings.simplefilter("ignore")
        from pearl_verl.stats import mean_ci
        from pearl_verl.train_local.heldout import paired, read_heldout
        from pearl_verl.train_local.moves import move_rates
        from pearl_verl.train_local.run_outputs import read_metrics

    evaluations = [held for _, held in read_heldout(folder / "heldout.jsonl")]
    first, last = evaluations[0], evaluations[-1]
    steps = [row["timing_s/step"] for row in read_metrics(folder / "metrics.jsonl")
             if row.get("phase") == "train" and "timing_s/step" in row]
    stock = stock_lines(folder)
    out: dict[str, Any] = {
        "reward_first": statistics.fmean(r for r in first.rewards if r is not None),
        "reward_last": statistics.fmean(r for r in last.rewards if r is not None),
        "step_first": first.step, "step_last": last.step,
        "step0_spread": max(first.seed_means) - min(first.seed_means),
        "seed_means_first": first.seed_means,
        "dialogues_per_eval": len(first.rewards),
        "well_formed_first": statistics.fmean(first.observed["well_formed"]),
        "well_formed_last": statistics.fmean(last.observed["well_formed"]),
        "step_s_median": statistics.median(steps) if steps else None,
        "moves_first": move_rates(first.episodes, stock),
        "moves_last": move_rates(last.episodes, stock),
    }
    pairs = [(first.rewards[i], last.rewards[j]) for i, j in paired(first, last)
             if first.rewards[i] is not None and last.rewards[j] is not None]
    if control != "base" and last is not first and pairs:
        gain = mean_ci([b - a for a, b in pairs])
        out.update(change=gain.mean, ci_low=gain.low, ci_high=gain.high)
    return out


DEFAULTS = "defaults"
"""The ``setting`` of a row run with train-local's defaults for SmolLM2 (a row without the field is one)."""


def _key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row.get("setting", DEFAULTS), row["control"], row["seed"]


def record(row: dict[str, Any]) -> None:
    """Replace the row of the same setting, seed and control in :data:`RESULTS` (written whole, then moved into
    place)."""
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["runs"] if RESULTS.exists() else []
    rows = [r for r in rows if _key(r) != _key(row)] + [row]
    rows.sort(key=_key)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps({"runs": rows}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(RESULTS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--control", choices=sorted(CONTROLS), default="none")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "smollm2", help="the runs' folders go here")
    parser.add_argument("--setting", default=DEFAULTS, help="a name for the flags after -- (rows and folders)")
    parser.add_argument("extra", nargs="*", help="train-local flags, after --")
    args = parser.parse_args()
    failed = 0
    prefix = "" if args.setting == DEFAULTS else f"{args.setting}-"
    for seed in args.seeds:
        folder = args.runs / f"{prefix}{args.control}-seed-{seed}"
        code, memory, minutes, command = run(seed, args.control, folder, args.extra)
        if code:
            print(f"seed {seed}: train-local exited {code}; see {folder / 'train.log'}", file=sys.stderr)
            failed += 1
            continue
        row = {"setting": args.setting, "seed": seed, "control": args.control, **read_run(folder, args.control),
               "peak_gb": round(memory.peak_pss_gb, 2), "peak_rss_sum_gb": round(memory.peak_gb, 2),
               "minutes": round(minutes, 1), "machine": machine(),
               "date": datetime.date.today().isoformat(), "command": " ".join(command)}
        record(row)
        shown = {k: row.get(k) for k in ("change", "ci_low", "ci_high", "step0_spread", "well_formed_last",
                                         "step_s_median", "peak_gb", "minutes")}
        print(f"seed {seed}, control {args.control}: {json.dumps(shown)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
