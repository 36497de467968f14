"""The PEARL advantage step of a training step: the one function both trainer integrations call.

verl hands a step's samples over in two shapes. The V1 ``pearl_sync`` trainer reads each sample's
agent-loop ``extra_fields`` from TransferQueue, with the reward loop's fields under
``reward_extra_info``; the legacy hook gets one ``non_tensor_batch`` column per field, which
:func:`rows_from_columns` turns into rows of that same shape. From there :func:`pearl_advantage_step`
computes each dialogue's A_i through verl's estimator dispatch and the step's ``pearl/...`` metrics
(advantage, failure causes, judge replies, student fallbacks) that the failure guard and the logs read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.failure_guard import failure_cause_metrics
from pearl_verl.advantage.metrics import judge_parse_metrics, student_fallback_metrics
from pearl_verl.dims import JUDGE_OK_KEY
from pearl_verl.verl_plugin.adv_estimator import scalar_advantages
from pearl_verl.verl_plugin.names import END_REASON_KEY, REWARD_INFO_FIELD


def pearl_advantage_step(
    algorithm_config: Any,
    settings: AdvantageConfig,
    uids: np.ndarray,
    extras: Sequence[Any],
    metrics: dict[str, float],
    rewards: torch.Tensor | None = None,
    padding: Sequence[bool] | None = None,
) -> torch.Tensor:
    """Each dialogue's A_i from its reward fields, and the step's ``pearl/...`` metrics.

    Args:
        algorithm_config: verl's ``algorithm`` node; its ``adv_estimator`` must accept ``pearl_inputs``.
        settings: ``pearl.advantage``.
        uids: (bs,) group ids, one row per dialogue.
        extras: (bs,) each dialogue's agent-loop extra fields (``pearl_end_reason``, the student's
            fallback counts) with its reward fields under ``reward_extra_info``.
        metrics: filled with the step's ``pearl/...`` metrics.
        rewards: (bs,) scalar rewards (verl's dispatch hands them over; ``pearl`` does not read them).
        padding: (bs,) True for verl's synthetic padding rows, which no metric counts.

    Returns:
        (bs,) float32 advantages.
    """
    infos = [reward_info_of(extra) for extra in extras]
    scalar = scalar_advantages(algorithm_config, uids, infos, settings, metrics=metrics, rewards=rewards,
                               padding=padding)
    pads = [False] * len(extras) if padding is None else list(padding)
    metrics.update(failure_cause_metrics([end_reason_of(extra) for extra in extras],
                                         [info.get(JUDGE_OK_KEY) for info in infos], pads))
    metrics.update(judge_parse_metrics([None if pad else info for info, pad in zip(infos, pads, strict=True)]))
    metrics.update(student_fallback_metrics(
        [None if pad or not isinstance(extra, Mapping) else extra for extra, pad in zip(extras, pads, strict=True)]))
    return scalar


def rows_from_columns(columns: Mapping[str, Sequence[Any]], batch_size: int,
                      info_keys: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The legacy trainer's columns as V1-shaped extra fields, one dict per sample.

    Args:
        columns: ``non_tensor_batch``: the agent loop's extra fields and the reward fields, one column each.
        batch_size: the number of samples.
        info_keys: the columns that go under ``reward_extra_info`` (None: every column, so that an
            estimator configured with other ``pearl.advantage.dims`` finds its keys).
    """
    keys = list(columns) if info_keys is None else [key for key in info_keys if key in columns]
    rows = []
    for i in range(batch_size):
        row = {key: column[i] for key, column in columns.items()}
        row[REWARD_INFO_FIELD] = {key: row[key] for key in keys}
        rows.append(row)
    return rows


def reward_info_of(extra_fields: Any) -> Mapping[str, Any]:
    """A sample's ``reward_extra_info`` from its agent-loop extra fields ({} if absent)."""
    if isinstance(extra_fields, Mapping):
        info = extra_fields.get(REWARD_INFO_FIELD, {})
        return info if isinstance(info, Mapping) else {}
    return {}


def end_reason_of(extra_fields: Any) -> str | None:
    """The ``pearl_tutor`` agent loop's end reason from a sample's extra fields, or None."""
    return extra_fields.get(END_REASON_KEY) if isinstance(extra_fields, Mapping) else None
