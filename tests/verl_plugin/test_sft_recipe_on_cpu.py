"""The cold-start SFT recipe on CPU: its overrides compose with verl's SFT trainer config and carry the
paper's settings, and the same overrides, with a tiny model and CPU settings appended, train two real
steps of verl's ``SFTTrainer`` on gen-sft output (finite loss, parameters changed).

The training run is a subprocess: it installs verl's host-CPU platform and a 1-rank gloo process
group, which must not leak into the other tests' process.
"""

import argparse
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.config import FSDPEngineConfig, FSDPOptimizerConfig

from pearl_verl.data.prepare import PrepareConfig, SourceSpec, build_rows, write_rows
from pearl_verl.sft import gen_cli
from pearl_verl.verl_plugin.config import PEARL_SFT, compose_config

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "pearl" / "run_qwen3_30b_a3b_instruct_sft.sh"

# What differs on a 2-core CPU: device and dtype, no flash-attention packing, no compile, a batch of
# two, two steps. Everything else is the recipe's.
CPU_OVERRIDES = [
    "trainer.device=cpu",
    "engine.model_dtype=fp32",
    "engine.dtype=float32",
    "engine.use_torch_compile=False",
    "model.use_remove_padding=False",
    "+model.override_config.attn_implementation=sdpa",
    "model.enable_gradient_checkpointing=False",
    "data.train_batch_size=2",
    "data.use_dynamic_bsz=False",
    "data.num_workers=0",
    "trainer.total_training_steps=2",
    "trainer.save_freq=-1",
    "trainer.test_freq=-1",
    "checkpoint.save_contents=[model]",
]

TRAIN = textwrap.dedent(
    """
    import json, os, socket, sys
    import torch
    from torch.distributed.tensor import DTensor
    from pearl_verl.verl_plugin.config import PEARL_SFT, compose_config
    from pearl_verl.verl_plugin.cpu.platform import install_host_cpu_platform

    install_host_cpu_platform()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # verl reads its rank layout from torch.distributed's variables, as torchrun sets them
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    from verl.trainer.sft_trainer import SFTTrainer
    from verl.utils import tensordict_utils as tu

    def policy_state_dict(worker):  # copies: on one rank full_tensor() may be the parameter's own storage
        return {name: (v.full_tensor() if isinstance(v, DTensor) else v).detach().clone()
                for name, v in worker.engine.module.state_dict().items()}

    config = compose_config(PEARL_SFT, json.loads(sys.argv[1]))  # the recipe's config and overrides
    trainer = SFTTrainer(config)
    before = policy_state_dict(trainer.training_client)
    seen = {"train": [], "val": []}

    def spy(method, key):
        inner = getattr(trainer.training_client, method)
        def wrapper(data):
            output = inner(data)
            seen[key].append(float(tu.get(output, "metrics")["loss"]))
            return output
        setattr(trainer.training_client, method, wrapper)

    spy("train_batch", "train")
    spy("infer_batch", "val")
    trainer.fit()
    after = policy_state_dict(trainer.training_client)
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    print("RESULT " + json.dumps({**seen, "changed": len(changed), "params": len(before),
                                  "steps": trainer.total_training_steps, "lr": config.optim.lr}))
    """
)


def test_recipe_composes_with_verls_sft_config_and_has_the_papers_settings(sft_command, tmp_path):
    launcher, overrides = sft_command(RECIPE, DATA_DIR=str(tmp_path))
    assert "--nnodes=1" in launcher and "--nproc_per_node=8" in launcher  # one 8-GPU node, as in the paper
    cfg = compose_config(PEARL_SFT, overrides)  # unknown keys fail here
    engine, optim = omega_conf_to_dataclass(cfg.engine), omega_conf_to_dataclass(cfg.optim)
    assert isinstance(engine, FSDPEngineConfig) and engine.strategy == "fsdp2"
    assert isinstance(optim, FSDPOptimizerConfig) and optim.optimizer == "AdamW"
    # Paper: full-parameter finetuning of Qwen3-30B-A3B-Instruct-2507, one epoch, AdamW, fixed lr 5e-6.
    assert (optim.lr, optim.lr_scheduler_type, optim.lr_warmup_steps_ratio) == (5e-6, "constant", 0.0)
    assert cfg.model.path == "Qwen/Qwen3-30B-A3B-Instruct-2507" and cfg.model.lora_rank == 0
    assert cfg.trainer.total_epochs == 1
    assert "hf_model" in omega_conf_to_dataclass(cfg.checkpoint).save_contents  # the RL recipes start from it
    # The column gen-sft writes is the one the recipe points verl at; a too-long chat must fail loudly.
    assert cfg.data.messages_key == "messages" and cfg.data.truncation == "error"
    assert cfg.data.train_files == str(tmp_path / "pearl_sft/train.parquet")


def test_recipe_typo_fails_before_any_gpu_is_touched(sft_command, tmp_path):
    _, overrides = sft_command(RECIPE, DATA_DIR=str(tmp_path))
    with pytest.raises(ConfigCompositionException, match="Could not override 'optim.learning_rate'"):
        compose_config(PEARL_SFT, [*overrides, "optim.learning_rate=1e-5"])


def _gen_sft_data(tmp_path: Path) -> Path:
    rows, _ = build_rows([SourceSpec("gsm8k", "@fixture", "train")], PrepareConfig(seed=2, limit=16))
    prepared = write_rows(rows["train"], tmp_path / "prepared" / "train.parquet")
    parser = argparse.ArgumentParser()
    gen_cli.register(parser.add_subparsers())
    out = tmp_path / "sft"
    args = parser.parse_args(
        ["gen-sft", str(prepared), "-o", str(out), "--teacher", "scripted", "--val-fraction", "0.4", "--no-progress"]
    )
    assert args.handler(args) == 0
    return out


def test_the_recipe_trains_two_cpu_steps_of_verls_sft_trainer_on_gen_sft_output(sft_command, tmp_path):
    from pearl_verl.models.tiny import build_tiny_model

    data = _gen_sft_data(tmp_path)
    model = build_tiny_model(tmp_path / "model", moe=True)  # Qwen3-MoE, the paper's family, at toy size
    _, overrides = sft_command(
        RECIPE,
        MODEL_PATH=str(model),
        TRAIN_FILES=str(data / "train.parquet"),
        VAL_FILES=str(data / "val.parquet"),
        NGPUS_PER_NODE="1",
        SAVE_DIR=str(tmp_path / "ckpt"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", TRAIN, json.dumps([*overrides, *CPU_OVERRIDES])],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["steps"] == 2 and len(result["train"]) == 2 and result["lr"] == 5e-6
    assert all(math.isfinite(loss) and loss > 0 for loss in result["train"] + result["val"]) and result["val"]
    assert result["changed"] > result["params"] // 2  # AdamW moved the weights
    assert (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").read_text().strip() == "2"

