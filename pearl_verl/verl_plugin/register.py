"""Entry point of group ``verl.plugins``: importing this registers everything pearl_verl adds.

verl imports it on ``import verl`` in the driver, the TaskRunner and every Ray worker, and
swallows any exception at DEBUG level, so a broken plugin fails silently.
:func:`check_registered` makes that failure loud; launchers and a CPU test call it.
"""

from __future__ import annotations

# First, before any verl module below reads the device: the CPU platform must be registered by then.
from pearl_verl.verl_plugin.cpu.parts import register_cpu_parts

register_cpu_parts()

from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER  # noqa: E402
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY  # noqa: E402
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY  # noqa: E402

from pearl_verl.verl_plugin import adv_estimator, agent_loop, pearl_sync, reward_manager  # noqa: E402
from pearl_verl.verl_plugin.compat import AGENT_LOOP_REGISTRY  # noqa: E402


@dataclass(frozen=True)
class Registration:
    """One name pearl_verl registers in one of verl's registries."""

    kind: str
    name: str
    registry: dict[str, Any]
    expected: Any
    select_with: str

    @property
    def present(self) -> bool:
        return self.registry.get(self.name) == self.expected


REGISTRATIONS: tuple[Registration, ...] = (
    Registration(
        "advantage estimator",
        adv_estimator.ESTIMATOR_NAME,
        ADV_ESTIMATOR_REGISTRY,
        adv_estimator.compute_pearl_outcome_advantage,
        f"algorithm.adv_estimator={adv_estimator.ESTIMATOR_NAME}",
    ),
    Registration(
        "V1 trainer mode",
        pearl_sync.TRAINER_MODE,
        TRAINER_REGISTRY,
        pearl_sync.PearlSyncTrainer,
        f"trainer.v1.trainer_mode={pearl_sync.TRAINER_MODE}",
    ),
    Registration(
        "agent loop",
        agent_loop.AGENT_NAME,
        AGENT_LOOP_REGISTRY,
        {"_target_": f"{agent_loop.PearlTutorAgentLoop.__module__}.{agent_loop.PearlTutorAgentLoop.__qualname__}"},
        f"actor_rollout_ref.rollout.agent.default_agent_loop={agent_loop.AGENT_NAME}",
    ),
    Registration(
        "reward manager",
        reward_manager.REWARD_MANAGER_NAME,
        REWARD_MANAGER,
        reward_manager.PearlJudgeRewardManager,
        f"reward.reward_manager.name={reward_manager.REWARD_MANAGER_NAME}",
    ),
)


def missing_registrations() -> list[Registration]:
    """Registrations that are absent or were overwritten by another plugin."""
    return [reg for reg in REGISTRATIONS if not reg.present]


def check_registered() -> None:
    """Raise if any pearl_verl registration is missing from verl's registries.

    Raises:
        RuntimeError: listing the missing names and how to fix them.
    """
    missing = missing_registrations()
    if missing:
        names = ", ".join(f"{reg.kind} '{reg.name}'" for reg in missing)
        raise RuntimeError(
            f"pearl_verl is not fully registered with verl: missing {names}. Check that pearl_verl is "
            "pip-installed in this environment (its 'verl.plugins' entry point loads it on 'import verl'), "
            "that VERL_USE_EXTERNAL_PLUGINS is unset, 'auto' or includes 'pearl', and run "
            "'pearl-verl doctor' for details."
        )
