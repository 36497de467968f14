"""Per-sample reward fields (the judge's ``reward_extra_info``) -> the estimator's tensors.

A reward manager reports, for every dialogue, one score per dimension plus ``judge_ok``,
``completed`` and ``tutor_turns`` (see :mod:`pearl_verl.dims`). verl hands these over either as
one dict per sample (V1 trainer, ``extra_fields["reward_extra_info"]``) or as one column per key
(legacy trainer, ``non_tensor_batch``). Both become one :class:`PearlInputs`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pearl_verl.advantage.estimator import AdvantageBreakdown, AdvantageConfig, compute_pearl_advantage_breakdown
from pearl_verl.dims import COMPLETED_KEY, JUDGE_OK_KEY, TUTOR_TURNS_KEY
from pearl_verl.errors import InputError


@dataclass(frozen=True)
class PearlInputs:
    """The per-sample inputs of :func:`pearl_verl.advantage.compute_pearl_advantage`.

    Attributes:
        dim_scores: (bs, K) float64 scores in config ``dims`` order; NaN where the judge failed.
        num_turns: (bs,) float64 tutor turns.
        completed: (bs,) bool.
        valid: (bs,) bool, False where the judge failed (``judge_ok == 0``) or the row is padding.
        padding: (bs,) bool, True for verl's synthetic padding rows (left out of metrics), or None.
    """

    dim_scores: torch.Tensor
    num_turns: torch.Tensor
    completed: torch.Tensor
    valid: torch.Tensor
    padding: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.dim_scores.shape[0]


def breakdown_from_inputs(inputs: PearlInputs, index: Any, config: AdvantageConfig) -> AdvantageBreakdown:
    """The estimator on ``inputs`` with every setting taken from ``config``."""
    return compute_pearl_advantage_breakdown(
        inputs.dim_scores,
        inputs.num_turns,
        inputs.completed,
        index,
        valid=inputs.valid,
        config=config,
    )


def shaped_rewards(rows: Sequence[Mapping[str, Any]], index: Any, config: AdvantageConfig) -> list[list[float] | None]:
    """Per sample, the discretised and turn-decayed reward r~ of each dimension (None where the judge failed)."""
    breakdown = breakdown_from_inputs(inputs_from_rows(rows, config), index, config)
    return [row.tolist() if bool(ok) else None for row, ok in zip(breakdown.rewards, breakdown.valid)]


def inputs_from_rows(
    rows: Sequence[Mapping[str, Any]],
    config: AdvantageConfig,
    padding: Sequence[bool] | None = None,
    labels: Sequence[str] | None = None,
) -> PearlInputs:
    """Build inputs from one ``reward_extra_info`` dict per sample (V1 trainer).

    Args:
        rows: per-sample dicts holding the ``config.dims`` keys and optionally ``judge_ok``,
            ``completed``, ``tutor_turns``.
        config: the estimator settings (which keys are dimensions; whether turns are needed).
        padding: (bs,) True for synthetic padding rows, which are made invalid.
        labels: (bs,) names of the samples in error messages (e.g. ``file:line``); default
            ``sample <i>``.

    Raises:
        InputError: naming the row and key of a missing or non-numeric field.
    """
    present = set().union(*(row.keys() for row in rows)) if rows else set()
    keys = (*config.dims, JUDGE_OK_KEY, COMPLETED_KEY, TUTOR_TURNS_KEY)
    columns = {key: [row.get(key) for row in rows] for key in keys if key in present}
    return inputs_from_columns(columns, len(rows), config, padding, labels)


def inputs_from_columns(
    columns: Mapping[str, Sequence[Any]],
    batch_size: int,
    config: AdvantageConfig,
    padding: Sequence[bool] | None = None,
    labels: Sequence[str] | None = None,
) -> PearlInputs:
    """Build inputs from one sequence per key (legacy trainer's ``non_tensor_batch``).

    Missing optional columns take documented defaults: ``judge_ok`` 1 (all scored), ``completed``
    1 (all completed); ``tutor_turns`` is required only when the turn decay is on (gamma < 1).

    Raises:
        InputError: naming the row and key of a missing or non-numeric field.
    """
    missing = [key for key in config.dims if key not in columns]
    if missing:
        raise InputError(
            f"The reward fields lack the dimension key(s) {missing} (have {sorted(columns)}). The "
            "PEARL estimator reads one score per entry of pearl.advantage.dims from the reward "
            "manager's reward_extra_info: use the pearl_judge reward manager, return these keys from "
            "yours, or set pearl.advantage.dims to the keys you return."
        )
    if config.gamma < 1.0 and TUTOR_TURNS_KEY not in columns:
        raise InputError(
            f"The turn penalty (pearl.advantage.gamma={config.gamma}) needs '{TUTOR_TURNS_KEY}' in the "
            "reward fields; return it from the reward manager or set pearl.advantage.gamma=1.0."
        )
    pad = None if padding is None else torch.as_tensor(list(padding), dtype=torch.bool)
    column = functools.partial(_column, columns, batch_size=batch_size, labels=labels)
    judge_ok = column(JUDGE_OK_KEY, default=1.0, valid=None if pad is None else ~pad)
    valid = judge_ok > 0.5 if pad is None else (judge_ok > 0.5) & ~pad
    scores = torch.stack([column(key, valid=valid) for key in config.dims], dim=1)
    return PearlInputs(
        dim_scores=scores,
        num_turns=column(TUTOR_TURNS_KEY, default=0.0, valid=valid),
        completed=column(COMPLETED_KEY, default=1.0, valid=valid) > 0.5,
        valid=valid,
        padding=pad,
    )


def _column(
    columns: Mapping[str, Sequence[Any]],
    key: str,
    batch_size: int,
    default: float | None = None,
    valid: torch.Tensor | None = None,
    labels: Sequence[str] | None = None,
) -> torch.Tensor:
    """One float64 column; values in rows outside ``valid`` may be None or NaN and become NaN."""
    if key not in columns:
        return torch.full((batch_size,), float(default), dtype=torch.float64)
    values = columns[key]
    if len(values) != batch_size:
        raise InputError(f"Reward field '{key}' has {len(values)} values for {batch_size} samples.")
    try:
        numeric = isinstance(values, np.ndarray) and values.dtype.kind in "biuf"
        out = torch.from_numpy(values.astype(np.float64)) if numeric else torch.tensor(list(values), dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        # Slow path only for rows holding None or other non-numbers (failed samples, or bad input).
        out = torch.tensor([_as_number(value) for value in values], dtype=torch.float64)
    if out.shape != (batch_size,):
        raise InputError(f"Reward field '{key}' must hold one scalar per sample, got shape {tuple(out.shape)}.")
    bad = torch.isnan(out) if valid is None else torch.isnan(out) & valid
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        where = labels[row] if labels is not None else f"sample {row}"
        raise InputError(
            f"Reward field '{key}' of {where} is {values[row]!r}, not a number. Every scored sample "
            f"must report '{key}'; mark failed judge calls with {JUDGE_OK_KEY}=0."
        )
    return out


def _as_number(value: Any) -> float:
    """A Python/numpy/torch scalar as float; NaN for anything else (None, strings, lists)."""
    if isinstance(value, np.generic) or (isinstance(value, torch.Tensor) and value.numel() == 1):
        value = value.item()
    return float(value) if isinstance(value, bool | int | float) else math.nan

