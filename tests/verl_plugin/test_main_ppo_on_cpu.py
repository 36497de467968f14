"""verl's own trainer, end to end on this CPU: ``recipes/pearl/run_cpu_pearl_gspo.sh`` runs ``main_ppo``.

Each test is a real run (Ray, TransferQueue, FSDP2, the agent-loop and reward-loop workers, verl's
checkpoint-engine weight sync, the ``hf`` rollout backend) of the tiny Qwen3-MoE for a few steps:
about a minute each, half of it Ray's start. The probe judge (a test double that rewards tutor
turns opening with a capital letter) gives the untrained policy's groups contrast; at lr 1e-2 a
later step's groups can all agree (every dialogue learned the property, or none shows it), and then
GRPO-style advantages are zero by definition: the checks follow each step's contrast, read from
the step's dump, rather than assume it. The run here is verl's legacy trainer; the same checks of the V1 trainer
(``pearl_sync``, the recipes') run on every step of the learning regression test's two runs of this recipe
(``test_main_ppo_learning_on_cpu.py``). Two runs of this ``main_ppo`` are
``tests/train_local/test_train_local.py``'s, a Ray start fewer each for the suite: a run stopped during its third
step and resumed from its checkpoint (``trainer.resume_mode=auto``), and a run whose judge is down the whole time,
which the failure guard stops with its message. The recipe's own kill and resume runs with verl's vLLM rollout
(``test_main_ppo_vllm_on_cpu.py``, marked ``long``).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from pearl_verl.dims import DIMENSIONS

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "pearl" / "run_cpu_pearl_gspo.sh"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The tiny model and the parquet data, made once for every run of this module."""
    root = tmp_path_factory.mktemp("cpu_main_ppo")
    subprocess.run(["python3", "-m", "pearl_verl.verl_plugin.smoke", "model", str(root / "model"), "--kind", "tiny"],
                   check=True, capture_output=True)
    subprocess.run(["pearl-verl", "prepare-data", "mathdial=@fixture", "-o", str(root / "data"),
                    "--conditions-per-problem", "2"], check=True, capture_output=True)
    return root


def _env(prepared: Path, out: Path, **env: str) -> dict[str, str]:
    return {**os.environ, "OUT_DIR": str(out), "MODEL_PATH": str(prepared / "model"), "DATA_DIR": str(prepared / "data"),
            "JUDGE_BACKEND": "probe-openings", "ACTOR_LR": "1e-2", **env}


def run_recipe(watched_run, prepared: Path, out: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess:
    return watched_run(["bash", str(RECIPE), *overrides], _env(prepared, out, **env)).wait()


def training_rows(out: Path) -> dict[int, dict]:
    """Step -> metrics of verl's file logger, training steps only (a line verl is still writing is not one yet)."""
    path = out / "metrics.jsonl"
    rows = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break
        if "pearl/judge/failure_rate" in row["data"]:
            rows[row["step"]] = row["data"]
    return rows


def contrasted_steps(folder: Path, steps: list[int]) -> set[int]:
    """The steps of which some group's dialogues got different shaped rewards (discretised, turn-decayed)."""
    contrasted = set()
    for step in steps:
        groups: dict[str, set] = {}
        for line in (folder / f"{step}.pearl.jsonl").read_text().splitlines():
            row = json.loads(line)
            groups.setdefault(row["uid"], set()).add(json.dumps(row["shaped"]))
        if any(len(shaped) > 1 for shaped in groups.values()):
            contrasted.add(step)
    return contrasted


def assert_pearl_steps(rows: dict[int, dict], steps: list[int], contrasted: set[int], v1: bool = True,
                       probs_steps: list[int] | None = None) -> None:
    """Every step trained on PEARL's per-dimension judge fields with rollouts from the actor's current weights, the
    rollout's token probabilities within 2e-4 of the actor's at ``probs_steps`` (default: every step)."""
    assert sorted(rows) == steps, sorted(rows)
    for step in steps:
        m = rows[step]
        assert m["pearl/judge/failure_rate"] == 0.0, (step, m["pearl/judge/failure_rate"])
        # the estimator saw the 8 dimensions and the turn counts, not the scalar fallback (no turns there)
        assert all(f"pearl/reward/{dim}/mean" in m for dim in DIMENSIONS), step
        assert m["pearl/episode/tutor_turns/mean"] > 0, step
        # advantages exactly where a group's dialogues differ, and then a gradient
        if step in contrasted:
            assert m["pearl/advantage/nonzero_frac"] > 0, step
            assert m["actor/grad_norm"] > 0, step
        else:
            assert m["pearl/advantage/nonzero_frac"] == 0, step
        # the rollout server generated with this step's weights: tagged with the step, and its token
        # probabilities are the actor's (measured: 5e-5 apart with the sync; without it, 7e-4 at step 2
        # and 1.2e-3 at step 3 at lr 1e-2)
        if v1:  # the legacy trainer does not tag rollouts with their weights' step
            assert m["training/off_policy/trajectory_staleness/max"] == 0, step
        if probs_steps is None or step in probs_steps:
            assert m["training/rollout_probs_diff_max"] < 2e-4, (step, m["training/rollout_probs_diff_max"])


def assert_legacy_whole_stack(out: Path, proc: subprocess.CompletedProcess) -> None:
    """Three steps of the legacy trainer, which does not tag rollouts with their weights' step."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "smoke run passed" in proc.stdout
    contrasted = assert_pearl_dumps(out / "rollouts", [1, 2, 3])
    assert 1 in contrasted  # the untrained policy's dialogues differ: the run had something to learn from
    assert_pearl_steps(training_rows(out), [1, 2, 3], contrasted, v1=False)


def assert_pearl_dumps(folder: Path, steps: list[int], dialogues: int = 2 * 4) -> set[int]:
    """Each of a step's ``dialogues`` with its judgement and advantage, beside verl's own dump of the step; the
    contrasted steps."""
    contrasted = contrasted_steps(folder, steps)
    for step in steps:
        assert (folder / f"{step}.jsonl").is_file()
        dump = [json.loads(line) for line in (folder / f"{step}.pearl.jsonl").read_text().splitlines()]
        assert len(dump) == dialogues
        assert any(row["advantage"] != 0 for row in dump) == (step in contrasted), step
        assert all(row["episode"]["turns"] and row["judge"]["judge_ok"] == 1 for row in dump)
    return contrasted


def test_the_legacy_trainer_runs_the_whole_pearl_stack(watched_run, prepared, tmp_path):
    """Three steps of verl's legacy trainer (``trainer.use_v1=false``), the one a user's existing setup may run. The
    V1 trainer (``pearl_sync``, the recipes') is checked the same way, step by step, in each run of the learning
    regression test (test_main_ppo_learning_on_cpu.py), a Ray start fewer for the suite."""
    assert_legacy_whole_stack(tmp_path, run_recipe(watched_run, prepared, tmp_path, "trainer.use_v1=false"))
