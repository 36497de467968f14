"""``python -m pearl_verl.verl_plugin.main_ppo <overrides>``: verl's PPO entry with PEARL checks.

Same Hydra config and overrides as ``python -m verl.trainer.main_ppo``. Before Ray starts it
checks that the plugin registered and that the ``pearl:`` section is valid. With
``trainer.use_v1=false`` it runs the legacy trainer with :func:`legacy_advantage_hook`, the opt-in
that gives the PEARL estimator its per-dimension fields there. With the V1 trainer (default),
use ``trainer.v1.trainer_mode=pearl_sync``, from this entry or from plain ``verl.trainer.main_ppo``.
Any other trainer hands the estimator the scalar reward only: with the ``pearl_judge`` reward
manager that stops the run, here before Ray starts, elsewhere at the first advantage step.
"""

from __future__ import annotations

import hydra
import ray
from omegaconf import DictConfig
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
from verl.trainer.main_ppo_v0 import TaskRunner as _VerlLegacyTaskRunner
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root
from pearl_verl.verl_plugin.cpu.parts import check_cpu_rollout
from pearl_verl.verl_plugin.legacy import legacy_advantage_hook
from pearl_verl.verl_plugin.pearl_sync import check_pearl_trainer_config
from pearl_verl.verl_plugin.register import check_registered


class PearlLegacyTaskRunner(_VerlLegacyTaskRunner.__ray_actor_class__):
    """verl's legacy TaskRunner, run inside :func:`legacy_advantage_hook`."""

    def run(self, config: DictConfig) -> None:
        with legacy_advantage_hook():
            super().run(config)


def prepare(config: DictConfig) -> None:
    """Everything checked before Ray starts: registrations, ``pearl:``, the CPU rollout, verl's own validation."""
    check_registered()
    pearl_config_from_root(config)
    check_pearl_trainer_config(config)
    check_cpu_rollout(config)
    auto_set_device(config)
    validate_config(
        config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
    )


@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer", version_base=None)
def main(config: DictConfig) -> None:
    prepare(config)
    runner = TaskRunnerV1 if config.trainer.use_v1 else ray.remote(PearlLegacyTaskRunner)
    run_ppo(config, task_runner_class=runner)


if __name__ == "__main__":
    main()
