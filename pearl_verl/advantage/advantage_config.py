"""``AdvantageConfig``: the estimator's settings (root config section ``pearl.advantage``), without torch.

The one place each setting and its default is written. The config loader, ``train-local``'s flags and the
estimator (:mod:`pearl_verl.advantage.estimator`) all take them from here, so reading a config needs no torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.ranges import Range

AGGREGATIONS = ("advantage", "reward")
WEIGHT_SUM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class AdvantageConfig:
    """Settings of the PEARL estimator (root config section ``pearl.advantage``).

    Attributes:
        gamma: turn-count decay factor in (0, 1]; 1.0 switches the turn penalty off.
        weights: one non-negative weight per entry of ``dims``, summing to 1; None means 1/K each.
        discretize: snap each dimension score to {0.1, 0.3, 0.5, 0.7, 0.9} (the paper's dis()).
            When False the raw score is kept, and the turn decay still stops at the bin floor.
        aggregation: ``"advantage"`` (PEARL: z-score each dimension, then weighted mean) or
            ``"reward"`` (the paper's T4 baseline: weighted mean of rewards, then one z-score).
        dims: the per-sample reward fields read as dimensions, in order.
        epsilon: added to the group standard deviation.
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "gamma": Range(float, low=0, low_open=True, high=1,
                       why="the per-turn decay factor; 1 switches the turn penalty off"),
        "epsilon": Range(float, low=0, low_open=True, why="added to the group's standard deviation; default 1e-6"),
    }
    """The allowed values of the number settings, checked here and by every flag that sets one."""

    gamma: float = 0.98
    weights: tuple[float, ...] | None = None
    discretize: bool = True
    aggregation: str = "advantage"
    dims: tuple[str, ...] = DIMENSIONS
    epsilon: float = 1e-6

    def __post_init__(self) -> None:
        gamma, epsilon = check_scalars(self.gamma, self.epsilon, self.aggregation, field_prefix="pearl.advantage.")
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "epsilon", epsilon)
        dims = tuple(self.dims)
        if not dims or len(set(dims)) != len(dims) or not all(isinstance(d, str) and d for d in dims):
            raise InputError(
                f"pearl.advantage.dims={list(dims)!r} must be a non-empty list of distinct names; "
                f"the default is {list(DIMENSIONS)}."
            )
        object.__setattr__(self, "dims", dims)
        if self.weights is not None:
            weights = tuple(float(w) for w in self.weights)
            if len(weights) != len(dims):
                raise InputError(
                    f"pearl.advantage.weights has {len(weights)} entries but dims has {len(dims)} "
                    f"({list(dims)}); give one weight per dimension or leave weights unset for 1/K."
                )
            check_weight_rows([list(weights)], "pearl.advantage.weights")
            object.__setattr__(self, "weights", weights)


SETTINGS = tuple(f.name for f in dataclasses.fields(AdvantageConfig) if f.name not in ("dims", "weights"))
"""What an estimator call may set by name; ``dims`` says which reward fields are read, ``weights`` is an argument."""


def with_settings(config: AdvantageConfig, settings: Mapping[str, Any]) -> AdvantageConfig:
    """``config`` with ``settings`` (a call's ``gamma=...``) in place of its own, checked under their plain names.

    Raises:
        InputError: for a name that is not in :data:`SETTINGS`, or a value out of its range.
    """
    if not settings:
        return config
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise InputError(f"unknown estimator setting(s) {unknown}; the settings are {list(SETTINGS)}.")
    merged = {**{name: getattr(config, name) for name in SETTINGS}, **settings}
    gamma, epsilon = check_scalars(merged["gamma"], merged["epsilon"], merged["aggregation"])
    return dataclasses.replace(config, **{**merged, "gamma": gamma, "epsilon": epsilon})


def check_scalars(gamma: Any, epsilon: Any, aggregation: str, field_prefix: str = "") -> tuple[float, float]:
    """``(gamma, epsilon)`` as floats, each checked against its range, and ``aggregation`` checked."""
    checked = []
    for name, given in (("gamma", gamma), ("epsilon", epsilon)):
        key, value = f"{field_prefix}{name}", _real(given, f"{field_prefix}{name}")
        AdvantageConfig.RANGES[name].check(key, given if type(given) in (int, float) else value)  # shown as given
        checked.append(value)
    if aggregation not in AGGREGATIONS:
        raise InputError(
            f"{field_prefix}aggregation={aggregation!r} is not one of {list(AGGREGATIONS)}: "
            "'advantage' is PEARL, 'reward' is the mean-reward baseline."
        )
    return checked[0], checked[1]


def check_weight_rows(rows: Sequence[Sequence[float]], name: str, first_row: int = 0) -> None:
    """Each row of weights is finite, non-negative and sums to 1 (rows numbered from ``first_row``).

    Raises:
        InputError: naming ``name`` and the first row that is not.
    """
    if not all(math.isfinite(w) and w >= 0 for row in rows for w in row):
        raise InputError(f"{name} must be finite and non-negative; got {[list(row) for row in rows[:4]]}.")
    for i, row in enumerate(rows):
        total = math.fsum(row)
        if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            raise InputError(
                f"{name} row {first_row + i} sums to {total:.6g}, not 1: the advantage is a weighted "
                "mean of per-dimension advantages, so each row of weights must sum to 1."
            )


def _real(value: Any, name: str) -> float:
    """``value`` as a float: a Python, numpy or one-element tensor number, never a boolean.

    ``True`` is an int to Python and would pass as 1.0 (no decay): a flag passed where a factor
    goes is refused instead.
    """
    if isinstance(value, np.generic) or (_is_tensor(value) and value.numel() == 1):
        value = value.item()
    if isinstance(value, bool):
        raise InputError(f"{name}={value!r} is a boolean, not a number.")
    if not isinstance(value, int | float):
        raise InputError(f"{name}={value!r} has type {type(value).__name__}, not a number.")
    return float(value)


def _is_tensor(value: Any) -> bool:
    # Without importing torch: reading a config must not cost torch's import.
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "numel")
