"""Opt-in PEARL advantage for verl's legacy trainer (``trainer.use_v1=false``).

The legacy ``RayPPOTrainer.fit`` calls ``ray_trainer.compute_advantage(data, ...)`` in its
TaskRunner process, and that function hands estimators no per-sample reward fields. Inside
:func:`legacy_advantage_hook` both that function and ``compute_data_metrics`` are replaced, in
memory and for the TaskRunner process only, by wrappers that forward ``non_tensor_batch``'s judge
fields to an estimator accepting ``pearl_inputs`` and log its ``pearl/...`` metrics. Everything
else goes to verl's originals. Start training with
``python -m pearl_verl.verl_plugin.main_ppo trainer.use_v1=false ...`` to get the hook.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any

from verl.protocol import DataProto
from verl.trainer.ppo import core_algos, ray_trainer

from pearl_verl.failure_guard import FailureGuard
from pearl_verl.reward_fields import inputs_from_columns
from pearl_verl.verl_plugin.estimator import accepts_pearl_inputs, pearl_config_from_algorithm_config

logger = logging.getLogger(__name__)

METRICS_META_KEY = "pearl_metrics"


def pearl_compute_advantage(original: Callable[..., DataProto]) -> Callable[..., DataProto]:
    """Wrap verl's legacy ``compute_advantage`` so PEARL-capable estimators get the judge fields.

    The wrapper also keeps a :class:`~pearl_verl.failure_guard.FailureGuard` (built from the first
    call's ``pearl.failure_guard``) that stops the run when most dialogues fail step after step.
    """
    guards: list[FailureGuard] = []

    @functools.wraps(original)
    def compute_advantage(data: DataProto, adv_estimator: Any, *args: Any, config: Any = None, **kwargs: Any) -> DataProto:
        try:
            estimator = core_algos.get_adv_estimator_fn(adv_estimator)
        except ValueError:
            estimator = None
        if estimator is None or not accepts_pearl_inputs(estimator):
            return original(data, adv_estimator, *args, config=config, **kwargs)
        pearl_config = pearl_config_from_algorithm_config(config)
        settings = pearl_config.advantage
        inputs = inputs_from_columns(data.non_tensor_batch, len(data), settings)
        metrics: dict[str, float] = {}
        advantages, returns = estimator(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch["uid"],
            config=config,
            pearl_inputs=inputs,
            pearl_config=settings,
            metrics=metrics,
        )
        if not guards:
            guards.append(FailureGuard(pearl_config.failure_guard))
        guards[0].update(metrics)
        data.batch["advantages"] = advantages
        data.batch["returns"] = returns
        data.meta_info[METRICS_META_KEY] = metrics
        return data

    return compute_advantage


def pearl_data_metrics(original: Callable[..., dict]) -> Callable[..., dict]:
    """Wrap verl's ``compute_data_metrics`` to add the metrics the advantage step left in meta_info."""

    @functools.wraps(original)
    def compute_data_metrics(batch: DataProto, *args: Any, **kwargs: Any) -> dict:
        metrics = original(batch, *args, **kwargs)
        return {**metrics, **batch.meta_info.get(METRICS_META_KEY, {})}

    return compute_data_metrics


@contextlib.contextmanager
def legacy_advantage_hook() -> Iterator[None]:
    """Install the two wrappers in ``verl.trainer.ppo.ray_trainer`` for the duration of a run."""
    saved = ray_trainer.compute_advantage, ray_trainer.compute_data_metrics
    ray_trainer.compute_advantage = pearl_compute_advantage(saved[0])
    ray_trainer.compute_data_metrics = pearl_data_metrics(saved[1])
    try:
        yield
    finally:
        ray_trainer.compute_advantage, ray_trainer.compute_data_metrics = saved
