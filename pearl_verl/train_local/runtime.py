"""verl's config for train-local (its precision: :mod:`pearl_verl.train_local.precision`). Training itself runs in
verl's trainers as child processes (:mod:`pearl_verl.train_local.verl_run`).
"""

from __future__ import annotations

from omegaconf import DictConfig


def compose_verl_config(overrides: list[str]) -> DictConfig:
    """The config main_ppo runs train-local's RL stage with: ``pearl_gspo_cpu`` (verl's ``ppo_trainer`` with
    PEARL's method and the CPU's engine settings) and ``overrides``."""
    from pearl_verl.verl_plugin.config import PEARL_GSPO_CPU, compose_config

    return compose_config(PEARL_GSPO_CPU, overrides)
