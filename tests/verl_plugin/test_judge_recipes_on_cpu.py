"""Judge recipes on CPU: the SFT overrides compose with verl's SFT trainer config and validate;
the serving and scoring scripts print the intended commands and fail early on a dead endpoint."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import FSDPEngineConfig, FSDPOptimizerConfig

from pearl_verl.llm.local_server import LocalChatServer
from pearl_verl.verl_plugin.config import PEARL_SFT, compose_config

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "pearl"
SFT = RECIPES / "run_qwen3_32b_judge_sft.sh"


def dry_run(script: Path, *args: str, **env: str) -> list[str]:
    proc = subprocess.run(
        ["bash", str(script), "--dry-run", *args], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return proc.stdout.splitlines()


def test_sft_recipe_composes_with_verls_sft_config_and_has_the_papers_settings(sft_command, tmp_path):
    launcher, overrides = sft_command(SFT, DATA_DIR=str(tmp_path), MODEL_PATH=str(tmp_path / "qwen3-32b"))
    assert "--nnodes=2" in launcher and "--nproc_per_node=8" in launcher
    cfg = compose_config(PEARL_SFT, overrides)  # unknown keys fail here
    engine = omega_conf_to_dataclass(cfg.engine)
    optim = omega_conf_to_dataclass(cfg.optim)
    checkpoint = omega_conf_to_dataclass(cfg.checkpoint)
    assert isinstance(engine, FSDPEngineConfig) and engine.strategy == "fsdp2"
    assert isinstance(optim, FSDPOptimizerConfig) and optim.optimizer == "AdamW"
    # Paper: full finetune, 1 epoch, global batch 256, fixed lr 5e-6.
    assert (optim.lr, optim.lr_scheduler_type, optim.lr_warmup_steps_ratio) == (5e-6, "constant", 0.0)
    assert cfg.trainer.total_epochs == 1 and cfg.data.train_batch_size == 256
    assert cfg.model.path == str(tmp_path / "qwen3-32b") and cfg.model.lora_rank == 0
    assert "hf_model" in checkpoint.save_contents
    assert cfg.data.train_files == str(tmp_path / "judge_sft/train.parquet")
    # The columns the converter writes are the ones the recipe points verl at.
    assert (cfg.data.messages_key, cfg.data.enable_thinking_key) == ("messages", "enable_thinking")
    assert OmegaConf.select(cfg, "data.pad_mode") == "no_padding" and cfg.data.truncation == "error"


def test_sft_recipe_typo_fails_before_any_gpu_is_touched(sft_command, tmp_path):
    _, overrides = sft_command(SFT, "optim.learning_rate=1e-5", DATA_DIR=str(tmp_path),
                               MODEL_PATH=str(tmp_path / "qwen3-32b"))
    with pytest.raises(ConfigCompositionException, match="Could not override 'optim.learning_rate'"):
        compose_config(PEARL_SFT, overrides)


def test_serve_recipe_prints_vllm_serve_with_prefix_caching():
    command = dry_run(RECIPES / "serve_judge.sh", "--max-num-batched-tokens", "16384", JUDGE_MODEL_PATH="/ckpt/judge")
    assert command[:3] == ["vllm", "serve", "/ckpt/judge"]
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--served-model-name"] == "pearl-judge" and flags["--tensor-parallel-size"] == "2"
    assert "--enable-prefix-caching" in command and '{"enable_thinking": false}' in command
    assert command[-2:] == ["--max-num-batched-tokens", "16384"]


def test_scoring_recipe_fails_early_on_a_dead_endpoint_and_passes_a_live_one(tmp_path):
    env = {**os.environ, "INPUT": str(tmp_path / "in.jsonl"), "OUTPUT": str(tmp_path / "out.jsonl")}
    script = str(RECIPES / "score_dialogues_with_judge.sh")
    dead = subprocess.run(
        ["bash", script],
        check=False,
        capture_output=True,
        text=True,
        env={**env, "JUDGE_BASE_URL": "http://127.0.0.1:9/v1"},
        timeout=600,  # a hang guard: a busy machine may take minutes, never fails on time
    )
    assert dead.returncode == 1 and "judge endpoint http://127.0.0.1:9/v1 is not reachable" in dead.stderr
    assert not (tmp_path / "out.jsonl").exists()
    # A live endpoint passes the check and the scoring command runs (a stub stands in for pearl-verl).
    stub = tmp_path / "bin" / "pearl-verl"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "ran.txt"}\n')
    stub.chmod(0o755)
    with LocalChatServer(lambda body: "{}", model="pearl-judge") as server:
        live = subprocess.run(
            ["bash", script, "--samples", "3"],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,  # a hang guard: a busy machine may take minutes, never fails on time
            env={**env, "JUDGE_BASE_URL": server.base_url, "PATH": f"{stub.parent}:{env['PATH']}"},
        )
    assert live.returncode == 0, live.stderr
    ran = (tmp_path / "ran.txt").read_text().split()
    assert (
        ran[:2] == ["judge", str(tmp_path / "in.jsonl")] and server.base_url in ran and ran[-2:] == ["--samples", "3"]
    )
    assert ran[ran.index("--structured-output") + 1] == "json_schema"  # vLLM's, as serve_judge.sh serves it


def test_a_served_judge_that_cannot_rank_the_calibration_pairs_stops_the_rl_recipe_before_training(tmp_path):
    from pearl_verl.dims import DIMENSIONS
    from pearl_verl.judge.rubric import RUBRIC

    # a judgement that parses and ranks nothing: every dialogue gets it
    same = json.dumps({d: {c.key: {"score": c.high, "rationale": f"turn 3 shows {c.key}"}
                           for c in RUBRIC.for_dimension(d)} for d in DIMENSIONS})
    out = tmp_path / "run"
    with LocalChatServer(lambda body: same, model="pearl-judge") as server:
        proc = subprocess.run(
            ["bash", str(RECIPES / "run_cpu_pearl_gspo.sh")], check=False, capture_output=True, text=True,
            timeout=600,  # a hang guard: a busy machine may take minutes, never fails on time
            env={**os.environ, "OUT_DIR": str(out), "JUDGE_BASE_URL": server.base_url, "JUDGE_MODEL": "pearl-judge"},
        )
        judged = len(server.requests)
    assert proc.returncode == 1
    assert "error: the judge cannot rank these pairs: it orders only 0%" in proc.stderr
    assert f"error: the judge at {server.base_url} cannot rank the calibration pairs (above)" in proc.stderr
    assert "JUDGE_CHECK=0" in proc.stderr
    assert judged >= 24 and not out.exists()  # the 12 pairs judged; no model, data or run made


def test_a_served_judge_that_disagrees_with_the_teachers_stops_the_rl_recipe_before_training(
        tmp_path, ranking_judge, ranking_judge_teachers):
    out = tmp_path / "run"
    with LocalChatServer(ranking_judge, model="pearl-judge") as server:
        proc = subprocess.run(
            ["bash", str(RECIPES / "run_cpu_pearl_gspo.sh")], check=False, capture_output=True, text=True,
            timeout=600,  # a hang guard: a busy machine may take minutes, never fails on time
            env={**os.environ, "OUT_DIR": str(out), "JUDGE_BASE_URL": server.base_url, "JUDGE_MODEL": "pearl-judge",
                 "JUDGE_HUMAN_FILE": str(ranking_judge_teachers(agree=False))},
        )
    assert proc.returncode == 1, proc.stderr
    assert "the judge ranks these pairs" in proc.stdout  # the contrast pairs passed; the teachers' labels did not
    assert ("error: the judge does not agree with the teachers: it orders under 50% of the pairs as the teachers do "
            "on Revealing_of_the_Answer 0%.") in proc.stderr
    assert f"error: the judge at {server.base_url} does not order tutor turns as teachers do (above)" in proc.stderr
    assert "JUDGE_HUMAN_CHECK=0" in proc.stderr and not out.exists()  # no model, data or run made
