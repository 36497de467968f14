"""The failure guard's stop in verl's trainers: after the step's update, with that step saved.

verl saves checkpoints only every ``trainer.save_freq`` steps (default -1: never), so a stop that
relied on those could leave nothing to resume from. Both trainers (``pearl_sync`` and the legacy
hook) therefore let the tripping step finish its update, save it through verl's own
``_save_checkpoint`` and only then raise; ``trainer.resume_mode=auto`` continues at the next step.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pearl_verl.advantage.failure_guard import FailureGuard, TrainingStalled

logger = logging.getLogger(__name__)


def failure_guard(root: Any) -> FailureGuard:
    """The run's failure guard, the same for both trainers: ``pearl.failure_guard`` of verl's root config, whose stop
    names the run's judge endpoint (``reward.reward_kwargs.base_url``) and student endpoint (``pearl.student``)."""
    from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root

    pearl_config = pearl_config_from_root(root)
    judge_url = ((root.get("reward") or {}).get("reward_kwargs") or {}).get("base_url")
    return FailureGuard(pearl_config.failure_guard, endpoints={
        "judge": judge_url, "student": pearl_config.student.base_url})


def stop_with_checkpoint(trainer: Any, stall: TrainingStalled, saved: bool = False) -> TrainingStalled:
    """The error to raise for ``stall``, once ``trainer``'s checkpoint of this step is on disk.

    Args:
        trainer: verl's V1 or legacy trainer, after this step's update; its ``_save_checkpoint``
            writes ``<trainer.default_local_dir>/global_step_<global_steps>``.
        stall: the failure guard's stop.
        saved: verl already saved this step (``trainer.save_freq``); nothing is written again.

    Returns:
        A :class:`TrainingStalled` whose message adds where the checkpoint is, or why there is none.
    """
    step = trainer.global_steps
    folder = os.path.join(str(trainer.config.trainer.default_local_dir), f"global_step_{step}")
    if not saved:
        try:
            trainer._save_checkpoint()
        except Exception as exc:  # noqa: BLE001 (the stop must come through whatever the save hit)
            logger.exception("Saving the checkpoint at the failure guard's stop failed")
            return TrainingStalled(
                f"{stall} Saving step {step}'s checkpoint at this stop failed ({type(exc).__name__}: {exc}); "
                "only checkpoints from trainer.save_freq exist."
            )
    return TrainingStalled(f"{stall} Step {step} (its update done) is saved in {folder}.")
