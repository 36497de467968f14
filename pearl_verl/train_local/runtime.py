"""verl on this process's CPU for train-local: the platform and process group its checks read, the composed
config, the update's precision. Training itself runs in verl's trainers as child processes
(:mod:`pearl_verl.train_local.verl_run`).
"""

from __future__ import annotations

import logging
import os
import socket

import torch
from omegaconf import DictConfig

logger = logging.getLogger(__name__)


def setup_process() -> None:
    """Install verl's host-CPU platform and start a 1-rank gloo process group in this process.

    verl reads its rank layout from the standard torch.distributed environment variables; they are
    set here for this single process only if absent. (train-local runs on the CPU; on GPUs the recipes run.)
    """
    from pearl_verl.verl_plugin.cpu.platform import install_host_cpu_platform

    install_host_cpu_platform()
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo", rank=0, world_size=1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def compose_verl_config(overrides: list[str]) -> DictConfig:
    """The config main_ppo runs train-local's RL stage with: ``pearl_gspo_cpu`` (verl's ``ppo_trainer`` with
    PEARL's method and the CPU's engine settings) and ``overrides``."""
    from pearl_verl.verl_plugin.config import PEARL_GSPO_CPU, compose_config

    return compose_config(PEARL_GSPO_CPU, overrides)


RL_ENGINE = "actor_rollout_ref.actor.fsdp_config"
SFT_ENGINE = "engine"
"""Where the FSDP engine's settings are in main_ppo's config and in verl's SFT trainer's."""


def precision_overrides(compute_dtype: str, engine: str = RL_ENGINE) -> list[str]:
    """The update's precision on the CPU: the weights and optimizer are float32 (``pearl_gspo_cpu``, ``pearl_sft_cpu``);
    verl's FSDP engine computes under bf16 autocast unless its ``mixed_precision`` says otherwise (its ``dtype``
    setting is not read by the FSDP engine), so ``compute_dtype="float32"`` sets a float32 mixed precision at
    ``engine`` (main_ppo's actor or the SFT trainer's engine)."""
    if compute_dtype != "float32":
        return []
    return [f"+{engine}.mixed_precision={{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}}"]
