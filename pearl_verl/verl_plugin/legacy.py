"""Opt-in PEARL advantage for verl's legacy trainer (``trainer.use_v1=false``).

The legacy ``RayPPOTrainer.fit`` calls ``ray_trainer.compute_advantage(data, ...)`` in its
TaskRunner process, and that function hands estimators no per-sample reward fields. Inside
:func:`legacy_advantage_hook` both that function and ``compute_data_metrics`` are replaced, in
memory and for the TaskRunner process only, by wrappers that forward ``non_tensor_batch``'s judge
fields to an estimator accepting ``pearl_inputs`` and log its ``pearl/...`` metrics. Everything
else goes to verl's originals. ``RayPPOTrainer._update_actor`` is wrapped as well, so that the
failure guard's stop comes after the tripping step's update, with that step saved
(:mod:`pearl_verl.verl_plugin.stall`), and ``RayPPOTrainer._log_rollout_data``, so that
``<step>.pearl.jsonl`` is written beside verl's dump as ``pearl_sync`` writes it. Start training with
``python -m pearl_verl.verl_plugin.main_ppo trainer.use_v1=false ...`` to get the hook.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from verl.protocol import DataProto
from verl.trainer.ppo import core_algos, ray_trainer

from pearl_verl.advantage.failure_guard import FailureGuard, TrainingStalled
from pearl_verl.judge.reward_info import REWARD_INFO_KEYS
from pearl_verl.verl_plugin.adv_estimator import (
    accepts_pearl_inputs,
    pearl_config_from_algorithm_config,
    pearl_config_from_root,
)
from pearl_verl.verl_plugin.advantage_step import pearl_advantage_step, rows_from_columns
from pearl_verl.verl_plugin.compat import config_root
from pearl_verl.verl_plugin.names import EPISODE_KEY
from pearl_verl.verl_plugin.rollout_dump import dump_rows, write_dump
from pearl_verl.verl_plugin.stall import failure_guard, stop_with_checkpoint

logger = logging.getLogger(__name__)

METRICS_META_KEY = "pearl_metrics"


@dataclass
class GuardState:
    """The run's failure guard (built at the first PEARL advantage step) and its pending stop."""

    guard: FailureGuard | None = None
    stall: TrainingStalled | None = None

    def update(self, root: Any, metrics: dict[str, float]) -> None:
        """Count one step of the run whose verl config is ``root``; a stop waits for the step's actor update
        (:func:`pearl_update_actor`)."""
        if self.guard is None:
            self.guard = failure_guard(root)
        try:
            self.guard.update(metrics)
        except TrainingStalled as stall:
            self.stall = stall


def pearl_compute_advantage(
    original: Callable[..., DataProto], state: GuardState | None = None
) -> Callable[..., DataProto]:
    """Wrap verl's legacy ``compute_advantage`` so PEARL-capable estimators get the judge fields.

    The wrapper also feeds ``state``'s failure guard (``pearl.failure_guard`` of the first call),
    with the ``pearl/failure/<cause>_rate`` metrics that name what failed.
    """
    state = state if state is not None else GuardState()

    @functools.wraps(original)
    def compute_advantage(data: DataProto, adv_estimator: Any, *args: Any, config: Any = None, **kwargs: Any) -> DataProto:
        try:
            estimator = core_algos.get_adv_estimator_fn(adv_estimator)
        except ValueError:
            estimator = None
        if estimator is None or not accepts_pearl_inputs(estimator):
            return original(data, adv_estimator, *args, config=config, **kwargs)
        if state.stall is not None:  # the stopping step never reached an actor update: stop unsaved
            raise state.stall
        root = config_root(config)
        pearl_config = pearl_config_from_root(root)
        metrics: dict[str, float] = {}
        scalar = pearl_advantage_step(
            config,
            pearl_config.advantage,
            data.non_tensor_batch["uid"],
            rows_from_columns(data.non_tensor_batch, len(data)),
            metrics,
            rewards=data.batch["token_level_rewards"].sum(dim=-1),
        )
        state.update(root, metrics)
        advantages = scalar.to(data.batch["response_mask"].device).unsqueeze(-1) * data.batch["response_mask"]
        data.batch["advantages"] = advantages
        data.batch["returns"] = advantages
        data.meta_info[METRICS_META_KEY] = metrics
        return data

    return compute_advantage


def pearl_update_actor(original: Callable[..., Any], state: GuardState) -> Callable[..., Any]:
    """Wrap ``RayPPOTrainer._update_actor``: after the update, a pending stop saves the step and raises."""

    @functools.wraps(original)
    def _update_actor(self: Any, batch: DataProto) -> Any:
        output = original(self, batch)
        if state.stall is not None:  # before verl's scheduled save and weight sync: ours saves this step
            raise stop_with_checkpoint(self, state.stall)
        return output

    return _update_actor


def pearl_log_rollout_data(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``RayPPOTrainer._log_rollout_data``: verl's dump, then each dialogue with its judge fields and advantage."""

    @functools.wraps(original)
    def _log_rollout_data(self: Any, batch: DataProto, reward_extra_infos_dict: dict, timing_raw: dict,
                          rollout_data_dir: str) -> Any:
        result = original(self, batch, reward_extra_infos_dict, timing_raw, rollout_data_dir)
        columns = batch.non_tensor_batch
        if EPISODE_KEY not in columns or "advantages" not in batch.batch:
            return result  # not a pearl_tutor run
        extras = rows_from_columns(columns, len(batch), info_keys=REWARD_INFO_KEYS)
        mask = batch.batch["response_mask"].bool()
        advantages = [float(row[m][0]) if m.any() else 0.0 for row, m in zip(batch.batch["advantages"], mask, strict=True)]
        settings = pearl_config_from_algorithm_config(self.config.algorithm).advantage
        rows = dump_rows(self.global_steps, list(columns["uid"]), extras, advantages, settings)
        write_dump(rollout_data_dir, self.global_steps, rows)
        return result

    return _log_rollout_data


def pearl_data_metrics(original: Callable[..., dict]) -> Callable[..., dict]:
    """Wrap verl's ``compute_data_metrics`` to add the metrics the advantage step left in meta_info."""

    @functools.wraps(original)
    def compute_data_metrics(batch: DataProto, *args: Any, **kwargs: Any) -> dict:
        metrics = original(batch, *args, **kwargs)
        return {**metrics, **batch.meta_info.get(METRICS_META_KEY, {})}

    return compute_data_metrics


@contextlib.contextmanager
def legacy_advantage_hook() -> Iterator[None]:
    """Install the four wrappers in ``verl.trainer.ppo.ray_trainer`` for the duration of a run."""
    trainer = ray_trainer.RayPPOTrainer
    saved = ray_trainer.compute_advantage, ray_trainer.compute_data_metrics, trainer._update_actor, trainer._log_rollout_data
    state = GuardState()
    ray_trainer.compute_advantage = pearl_compute_advantage(saved[0], state)
    ray_trainer.compute_data_metrics = pearl_data_metrics(saved[1])
    trainer._update_actor = pearl_update_actor(saved[2], state)
    trainer._log_rollout_data = pearl_log_rollout_data(saved[3])
    try:
        yield
    finally:
        ray_trainer.compute_advantage, ray_trainer.compute_data_metrics, trainer._update_actor, trainer._log_rollout_data = saved
