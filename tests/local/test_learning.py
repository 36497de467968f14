"""The learning regression test: training through the whole train-local path must learn.

``pearl-verl train-local --judge probe-openings`` runs the real path (pearl_tutor agent loop, judge
fields into ``reward_extra_info``, verl's estimator dispatch of ``pearl`` as ``pearl_sync`` does it,
verl's FSDP2 GSPO update, weight sync into the rollout server) with a test-double judge that rewards
one observable property: tutor turns that open with a capital letter
(:mod:`pearl_verl.local.probe_judge`). Tutor turns are one token long, so the rewarded token is the
first of its turn and the one the response mask must cover: shifted by one token either way, the
mask trains a scaffold token instead and nothing of the property is learned. Held-out probe reward
must rise by at least 0.3 within 20 steps in each of 3 seeds. A flipped advantage sign, a rollout
server that never receives the new weights, or a response mask shifted by one token each make it
fail (measured, docs/training.md); "parameters changed" passes all three.

The seeds run as parallel processes with one thread each.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

SEEDS = (0, 1, 2)
STEPS = 20
MIN_GAIN = 0.3
SETTINGS = [
    "--judge", "probe-openings", "--steps", str(STEPS), "--max-tutor-turns", "8", "--max-tokens-per-turn", "1",
    "--num-problems", "16", "--batch-problems", "4", "--group-size", "4", "--eval-problems", "4",
    "--eval-every", str(STEPS), "--save-every", str(STEPS), "--cold-start-steps", "0", "--eval-seeds", "1",
    "--student-ability", "all", "--lr", "2e-2", "--problems", "gsm8k",
]


def _held_out(out: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {row["step"]: row["eval/reward/mean"] for row in rows if "eval/reward/mean" in row}


def test_held_out_probe_reward_rises_in_every_seed(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # three processes share the cores
    procs = {
        seed: subprocess.Popen(
            [sys.executable, "-m", "pearl_verl.cli", "train-local", "--out-dir", str(tmp_path / f"seed{seed}"),
             "--seed", str(seed), *SETTINGS],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )
        for seed in SEEDS
    }
    logs = {seed: proc.communicate(timeout=900)[0] for seed, proc in procs.items()}
    for seed, proc in procs.items():
        assert proc.returncode == 0, f"seed {seed} failed:\n{logs[seed][-3000:]}"
    curves = {seed: _held_out(tmp_path / f"seed{seed}") for seed in SEEDS}
    summary = {seed: f"{c[0]:.3f} -> {c[STEPS]:.3f}" for seed, c in curves.items()}
    print(f"held-out probe reward, step 0 -> {STEPS}: {summary}")  # shown with pytest -rA
    assert all(sorted(c) == [0, STEPS] for c in curves.values()), curves
    assert all(c[STEPS] - c[0] >= MIN_GAIN for c in curves.values()), f"held-out probe reward, step 0 -> {STEPS}: {summary}"
