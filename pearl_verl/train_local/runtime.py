"""verl's actor in this process, for train-local's cold start: platform, process group, config, ``TrainingWorker``.

The actor is verl's own ``TrainingWorker`` over its FSDP2 engine, built exactly as verl's
``ActorRolloutRefWorker`` builds it, only in this process instead of a Ray actor, on verl's host-CPU
platform (gloo, fp32, SDPA attention). RL itself runs
in verl's ``main_ppo`` (:mod:`pearl_verl.train_local.verl_run`), which resumes from this actor's checkpoint.
"""

from __future__ import annotations

import logging
import os
import socket
from functools import partial
from typing import Any

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


def precision_overrides(compute_dtype: str) -> list[str]:
    """The update's precision on the CPU: the weights and optimizer are float32 (``pearl_gspo_cpu``); verl's FSDP
    engine computes under bf16 autocast unless ``fsdp_config.mixed_precision`` says otherwise (its ``dtype``
    setting is not read by the FSDP engine), so ``compute_dtype="float32"`` sets a float32 mixed precision."""
    if compute_dtype != "float32":
        return []
    return ["+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}"]


def build_actor(config: DictConfig) -> Any:
    """verl's ``TrainingWorker`` for the actor, with ``ppo_loss`` bound to the actor config."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.engine_workers import TrainingWorker, TrainingWorkerConfig
    from verl.workers.utils.losses import ppo_loss

    model_config = omega_conf_to_dataclass(config.actor_rollout_ref.model)
    actor_config = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    actor_config.model_config = model_config
    worker_config = TrainingWorkerConfig(
        model_type="language_model",
        model_config=model_config,
        engine_config=actor_config.engine,
        optimizer_config=actor_config.optim,
        checkpoint_config=actor_config.checkpoint,
    )
    engine = worker_config.engine_config
    engine.use_dynamic_bsz = False
    engine.micro_batch_size_per_gpu = config.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu
    engine.infer_micro_batch_size_per_gpu = config.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu
    engine.use_remove_padding = model_config.get("use_remove_padding", False)
    worker = TrainingWorker(config=worker_config)
    worker.reset()
    worker.set_loss_fn(partial(ppo_loss, config=actor_config))
    return worker


def get_learning_rate(worker: Any) -> float:
    """The actor optimizer's current learning rate."""
    return worker.engine.optimizer.param_groups[0]["lr"]


def set_learning_rate(worker: Any, lr: float) -> None:
    """Set the actor optimizer's learning rate, in the scheduler too (its next step would undo it)."""
    engine = worker.engine
    for group in engine.optimizer.param_groups:
        group["lr"] = lr
    if engine.lr_scheduler is not None:
        engine.lr_scheduler.base_lrs = [lr] * len(engine.optimizer.param_groups)


def policy_state_dict(worker: Any) -> dict[str, torch.Tensor]:
    """A copy of the actor's full (unsharded) weights under Hugging Face parameter names.

    A copy, not views: on one rank ``full_tensor()`` may return the parameter's own storage,
    which the next optimizer step would change under the caller.
    """
    from torch.distributed.tensor import DTensor

    return {
        name: (value.full_tensor() if isinstance(value, DTensor) else value).detach().clone()
        for name, value in worker.engine.module.state_dict().items()
    }
