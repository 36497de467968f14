"""verl's config for train-local: the composed config and the update's precision. Training itself runs in
verl's trainers as child processes (:mod:`pearl_verl.train_local.verl_run`).
"""

from __future__ import annotations

from omegaconf import DictConfig


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
