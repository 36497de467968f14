"""PEARL's multi-objective advantage: discretize -> turn decay -> per-dimension group z-score -> mean.

Pure torch, no verl import. For group G (same uid), dimension k, trajectory i (paper §3.3.2):

    b_ik  = min(floor(s_ik / 0.2), 4)                      reward bin
    r'_ik = 0.1 + 0.2 b_ik,   l_ik = 0.2 b_ik               dis(.) and the bin's lower boundary
    r~_ik = l_ik + (r'_ik - l_ik) * gamma^max(N_i - N_min, 0)  turn-count penalty; N_min over
                                                            completed, valid members of G
    A_ik  = (r~_ik - mean_G r~_k) / (std_G r~_k + eps)      unbiased std, valid members only
    A_i   = sum_k w_ik A_ik                                  w_ik = 1/K by default

Invalid samples (judge failed) get A_i = 0 and take no part in any group statistic; a group with
fewer than two valid members gives 0 to all of them (there is nothing to compare against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from pearl_verl.advantage.advantage_config import (
    AGGREGATIONS,
    SETTINGS,
    WEIGHT_SUM_TOLERANCE,
    AdvantageConfig,
    check_weight_rows,
    with_settings,
)
from pearl_verl.errors import InputError

__all__ = [
    "AGGREGATIONS", "SETTINGS", "AdvantageBreakdown", "AdvantageConfig", "compute_pearl_advantage",
    "compute_pearl_advantage_breakdown", "discretize_scores", "group_ids",
]

NUM_BINS = 5
BIN_WIDTH = 1.0 / NUM_BINS
# Scores this close below a bin edge count as on the edge, so a criterion mean such as 3/5 that
# floating point renders as 0.59999999 still lands in the bin whose floor is 0.6.
_EDGE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class AdvantageBreakdown:
    """Every intermediate of one estimator call, for metrics, reports and tests.

    Attributes:
        advantages: (bs,) float32 final advantage per trajectory; 0 for invalid samples.
        rewards: (bs, K) float32 discretized and turn-decayed rewards r~; NaN for invalid samples.
        dim_advantages: (bs, K) float32 per-dimension z-scores A_ik (``aggregation="advantage"``),
            or None for ``aggregation="reward"``.
        valid: (bs,) bool, the samples that took part in group statistics.
        group: (bs,) int64 dense group id of each sample.
        groups_without_contrast: number of groups with fewer than two valid members.
    """

    advantages: torch.Tensor
    rewards: torch.Tensor
    dim_advantages: torch.Tensor | None
    valid: torch.Tensor
    group: torch.Tensor
    groups_without_contrast: int


def compute_pearl_advantage(*args: Any, **kwargs: Any) -> torch.Tensor:
    """One PEARL advantage per trajectory: (bs,) float32, on the device of ``dim_scores``.

    The ``advantages`` of :func:`compute_pearl_advantage_breakdown`, which takes the same arguments
    and raises the same errors.
    """
    return compute_pearl_advantage_breakdown(*args, **kwargs).advantages


def compute_pearl_advantage_breakdown(
    dim_scores: Any,
    num_turns: Any,
    completed: Any,
    index: Any,
    *,
    valid: Any = None,
    weights: Any = None,
    config: AdvantageConfig | None = None,
    **settings: Any,
) -> AdvantageBreakdown:
    """The PEARL advantage with all its intermediates.

    Args:
        dim_scores: (bs, K) scores in [0, 1], each the mean of a dimension's completion-gated
            criterion scores. Rows with ``valid=False`` are ignored and may hold NaN.
        num_turns: (bs,) number of tutor turns N_i (non-negative).
        completed: (bs,) bool, whether the dialogue completed (the reward field ``completed``: ended
            normally with the judge's completion gate open); only completed members set N_min.
        index: (bs,) group ids (verl's ``uid``): a list, numpy array (object or numeric) or tensor;
            rows share a group when their uids share a :func:`group_key`.
        valid: (bs,) bool or None (all valid); False marks a failed judge call.
        weights: None (``config.weights``, else 1/K each), (K,) or (bs, K); non-negative, each row
            summing to 1.
        config: the estimator's settings (:class:`AdvantageConfig`, the ``pearl.advantage`` section);
            None for its defaults.
        **settings: any of :data:`SETTINGS` (``gamma``, ``epsilon``, ``discretize``,
            ``aggregation``), replacing ``config``'s.

    Returns:
        :class:`AdvantageBreakdown`; its ``advantages`` are :func:`compute_pearl_advantage`'s.

    Raises:
        InputError: naming the offending field, for bad shapes, non-finite values, scores
            outside [0, 1], gamma outside (0, 1], weights whose rows do not sum to 1, a uid
            that is None, NaN or a boolean (``index[i] ...``), or an unknown setting.
    """
    config = with_settings(AdvantageConfig() if config is None else config, settings)
    gamma, epsilon = config.gamma, config.epsilon
    discretize, aggregation = config.discretize, config.aggregation
    weights = config.weights if weights is None else weights
    scores = _as_float_matrix(dim_scores)
    device = scores.device
    bs, k = scores.shape
    turns = _as_vector(num_turns, "num_turns", bs, device, torch.float64)
    done = _as_flags(completed, "completed", bs, device)
    ok = torch.ones(bs, dtype=torch.bool, device=device) if valid is None else _as_flags(valid, "valid", bs, device)
    group, num_groups = group_ids(index, expected_len=bs, device=device)
    w = _as_weights(weights, bs, k, device)
    _check_rows(scores, turns, ok)

    # Invalid rows take no part in anything; zero them so a NaN there cannot leak into sums.
    zero = torch.zeros((), dtype=torch.float64, device=device)
    scores = torch.where(ok.unsqueeze(1), scores, zero)
    turns = torch.where(ok, turns, zero)
    rewards, floors = discretize_scores(scores) if discretize else (scores, bin_floors(scores))
    if gamma < 1.0:
        rewards = apply_turn_decay(rewards, floors, turns, done & ok, group, num_groups, gamma)

    if aggregation == "advantage":
        dim_adv, count = group_zscore(rewards, group, num_groups, ok, epsilon)
        advantages = (dim_adv * w).sum(dim=1)
    else:
        mean_reward = (rewards * w).sum(dim=1, keepdim=True)
        dim_adv = None
        advantages, count = group_zscore(mean_reward, group, num_groups, ok, epsilon)
        advantages = advantages.squeeze(1)

    nan = torch.full((), float("nan"), dtype=rewards.dtype, device=device)
    return AdvantageBreakdown(
        advantages=advantages.float(),
        rewards=torch.where(ok.unsqueeze(1), rewards, nan).float(),
        dim_advantages=None if dim_adv is None else dim_adv.float(),
        valid=ok,
        group=group,
        groups_without_contrast=int((count < 2).sum().item()),
    )


def bin_floors(scores: torch.Tensor) -> torch.Tensor:
    """Lower boundary l = 0.2 * min(floor(s / 0.2), 4) of each score's bin; shape of ``scores``."""
    bins = torch.floor(scores * NUM_BINS + _EDGE_TOLERANCE).clamp_(0, NUM_BINS - 1)
    return bins * BIN_WIDTH


def discretize_scores(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's dis(): r' = 0.1 + 0.2 b. Returns (r', l), both shaped like ``scores``."""
    floors = bin_floors(scores)
    return floors + BIN_WIDTH / 2, floors


def apply_turn_decay(
    rewards: torch.Tensor,
    floors: torch.Tensor,
    num_turns: torch.Tensor,
    sets_minimum: torch.Tensor,
    group: torch.Tensor,
    num_groups: int,
    gamma: float,
) -> torch.Tensor:
    """r~ = l + (r' - l) * gamma^max(N - N_min, 0), N_min per group over ``sets_minimum`` members.

    Args:
        rewards: (bs, K) r'.
        floors: (bs, K) bin lower boundaries l.
        num_turns: (bs,) N.
        sets_minimum: (bs,) bool, members eligible for N_min (completed and valid).
        group: (bs,) int64 dense group ids.
        num_groups: number of groups.
        gamma: decay factor in (0, 1].

    A group without an eligible member has N_min = +inf, so its exponent clamps to 0: no decay.
    """
    inf = torch.full((), math.inf, dtype=num_turns.dtype, device=num_turns.device)
    candidates = torch.where(sets_minimum, num_turns, inf)
    n_min = torch.full((num_groups,), math.inf, dtype=num_turns.dtype, device=num_turns.device)
    n_min = n_min.scatter_reduce(0, group, candidates, reduce="amin", include_self=True)
    excess = (num_turns - n_min[group]).clamp(min=0.0)
    decay = torch.pow(gamma, excess).unsqueeze(1)
    return floors + (rewards - floors) * decay


def group_zscore(
    values: torch.Tensor,
    group: torch.Tensor,
    num_groups: int,
    valid: torch.Tensor,
    epsilon: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-column group z-score over valid members, unbiased std as in verl's GRPO.

    Args:
        values: (bs, K).
        group: (bs,) int64 dense group ids.
        num_groups: number of groups.
        valid: (bs,) bool; invalid rows neither contribute nor receive a score (0).
        epsilon: added to the std.

    Returns:
        ((bs, K) z-scores, (num_groups,) valid-member counts). Groups with fewer than two valid
        members score 0.
    """
    rows = valid.unsqueeze(1)
    values = torch.where(rows, values, torch.zeros((), dtype=values.dtype, device=values.device))
    count = torch.zeros(num_groups, dtype=values.dtype, device=values.device).index_add_(0, group, valid.to(values.dtype))
    sums = torch.zeros(num_groups, values.shape[1], dtype=values.dtype, device=values.device).index_add_(0, group, values)
    mean = sums / count.clamp(min=1.0).unsqueeze(1)
    centered = torch.where(rows, values - mean[group], torch.zeros((), dtype=values.dtype, device=values.device))
    sq = torch.zeros_like(sums).index_add_(0, group, centered * centered)
    std = (sq / (count - 1.0).clamp(min=1.0).unsqueeze(1)).sqrt()
    contrast = (count[group] >= 2).to(values.dtype).unsqueeze(1)
    return centered / (std[group] + epsilon) * contrast, count


def group_ids(index: Any, expected_len: int | None = None, device: Any = None) -> tuple[torch.Tensor, int]:
    """Dense int64 group ids (0..G-1, in order of first appearance) of the uids in ``index``, and G.

    Two rows share a group exactly when their uids have the same :func:`group_key`, so a row's
    group never depends on the other uids of the batch or on the container (list, numpy array of
    any dtype, tensor) they come in.

    Raises:
        InputError: for an ``index`` that is not 1-D or not ``expected_len`` long, or naming the
            first row whose uid :func:`group_key` rejects (``index[i] ...``).
    """
    labels = _uid_array(index)
    if labels.ndim != 1:
        raise InputError(f"index has shape {labels.shape}; expected one group id per trajectory (1-D).")
    if expected_len is not None and labels.shape[0] != expected_len:
        raise InputError(
            f"index has {labels.shape[0]} entries but dim_scores has {expected_len} rows; "
            "pass one group id (verl's uid) per trajectory."
        )
    # Hash-based (pandas.factorize): sorting 64k uuid strings, as ``np.unique`` does, would take
    # most of the estimator's time.
    codes, uniques = pd.factorize(_canonical_labels(labels), use_na_sentinel=False)
    return torch.from_numpy(codes.astype(np.int64, copy=False)).to(device), len(uniques)


def group_key(uid: Any) -> str:
    """The canonical group key of one uid: its text.

    A numpy scalar or a one-element tensor is first unwrapped to its Python value (``.item()``);
    then a string is its own key and an int or float is ``str()`` of it. So ``1``,
    ``numpy.int64(1)`` and ``"1"`` share a group, while ``1.0`` (key ``"1.0"``) does not: keys are
    compared as text, as the ``advantage`` command always has, and verl's uids are strings
    (``str(uuid4())``), for which the key is the uid itself.

    Raises:
        InputError: for None and NaN (they would pool unrelated trajectories into one group), a
            boolean (a flag passed as uid would form two groups for the whole batch), or any other
            type (lists, dicts, bytes, ...). The message reads on from where the uid is, as in
            ``index[3] is None: ...`` or ``FILE:LINE: uid = True is a boolean ...``.
    """
    if isinstance(uid, np.generic) or (isinstance(uid, torch.Tensor) and uid.numel() == 1):
        uid = uid.item()
    if uid is None:
        raise InputError("is None: every trajectory needs a group id (verl's uid); None uids would form one group.")
    if isinstance(uid, bool):
        raise InputError(f"= {uid!r} is a boolean, not a group id; pass the uid (a string or an integer).")
    if isinstance(uid, str):
        return str(uid)
    if isinstance(uid, int):
        return str(int(uid))
    if isinstance(uid, float):
        if math.isnan(uid):
            raise InputError("is NaN: every trajectory needs a group id (verl's uid); NaN uids would form one group.")
        return str(uid)
    raise InputError(f"= {uid!r} has type {type(uid).__name__}; a group id is a string or a number.")


def _uid_array(index: Any) -> np.ndarray:
    if isinstance(index, torch.Tensor):
        return index.detach().cpu().numpy()
    if isinstance(index, np.ndarray):
        return index
    # dtype=object keeps each uid as given: np.asarray([1, 2.5]) would turn 1 into 1.0, and
    # np.asarray([1, "x"]) into "1", making a uid's key depend on the rest of the batch.
    return np.asarray(index, dtype=object)


def _canonical_labels(labels: np.ndarray) -> np.ndarray:
    """``labels`` (1-D) with each uid replaced by its :func:`group_key`, or an array grouping the same."""
    if labels.dtype.kind in "iuU":
        return labels  # ints and strings already group as their keys (str is one-to-one on ints)
    keys = np.empty(labels.shape[0], dtype=object)
    for row, uid in enumerate(labels.tolist()):
        if type(uid) is str:  # verl's uuid strings: the common case, kept cheap
            keys[row] = uid
            continue
        try:
            keys[row] = group_key(uid)
        except ValueError as exc:
            raise InputError(f"index[{row}] {exc}") from None
    return keys


def _to_tensor(values: Any, device: Any) -> torch.Tensor:
    if isinstance(values, np.ndarray) and values.dtype == object:
        # verl's non_tensor_batch holds object arrays of Python scalars.
        values = values.astype(np.float64)
    return torch.as_tensor(values, device=device)


def _as_float_matrix(dim_scores: Any) -> torch.Tensor:
    scores = _to_tensor(dim_scores, None)
    if scores.dtype == torch.bool or scores.is_complex():
        raise InputError(f"dim_scores has dtype {scores.dtype}; pass float scores in [0, 1].")
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise InputError(
            f"dim_scores has shape {tuple(scores.shape)}; expected (bs, K) with K >= 1 "
            "(one column per reward dimension)."
        )
    return scores.to(torch.float64)


def _as_vector(values: Any, name: str, bs: int, device: Any, dtype: torch.dtype) -> torch.Tensor:
    tensor = _to_tensor(values, device)
    if tensor.shape != (bs,):
        raise InputError(f"{name} has shape {tuple(tensor.shape)}; expected ({bs},), one entry per trajectory.")
    return tensor.to(dtype)


def _as_flags(values: Any, name: str, bs: int, device: Any) -> torch.Tensor:
    tensor = _as_vector(values, name, bs, device, torch.float64)
    bad = ~((tensor == 0) | (tensor == 1))
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        raise InputError(f"{name}[{row}] = {tensor[row].item()!r}; {name} must be boolean (True/False or 1/0).")
    return tensor.bool()


def _as_weights(weights: Any, bs: int, k: int, device: Any) -> torch.Tensor:
    if weights is None:
        return torch.full((bs, k), 1.0 / k, dtype=torch.float64, device=device)
    w = _to_tensor(weights, device).to(torch.float64)
    if w.shape == (k,):
        w = w.unsqueeze(0)
    elif w.shape != (bs, k):
        raise InputError(
            f"weights has shape {tuple(w.shape)}; expected ({k},) for all samples or ({bs}, {k}) per sample."
        )
    # The rows are checked as tensors (a batch has thousands); the first bad one is named by the shared check.
    bad = ~torch.isfinite(w).all(dim=1) | (w < 0).any(dim=1) | ((w.sum(dim=1) - 1.0).abs() > WEIGHT_SUM_TOLERANCE)
    if bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        check_weight_rows([w[row].tolist()], "weights", first_row=row)
    return w.expand(bs, k)


def _check_rows(scores: torch.Tensor, turns: torch.Tensor, valid: torch.Tensor) -> None:
    rows = valid.unsqueeze(1)
    bad = rows & ~torch.isfinite(scores)
    if bool(bad.any()):
        r, c = (int(x) for x in bad.nonzero()[0])
        raise InputError(
            f"dim_scores[{r}, {c}] = {scores[r, c].item()} is not finite in a valid row; "
            "mark failed judge calls with valid=False instead of a NaN score."
        )
    bad = rows & ((scores < 0) | (scores > 1))
    if bool(bad.any()):
        r, c = (int(x) for x in bad.nonzero()[0])
        value = scores[r, c].item()
        short = f"{value:.6g}"
        shown = short if float(short) not in (0.0, 1.0) else repr(value)  # 1.0000001 is not "1"
        raise InputError(
            f"dim_scores[{r}, {c}] = {shown} is outside [0, 1]; PEARL expects each "
            "dimension score to be a mean of criterion scores mapped to [0, 1]."
        )
    bad = valid & ~(torch.isfinite(turns) & (turns >= 0))
    if bool(bad.any()):
        r = int(bad.nonzero()[0, 0])
        raise InputError(f"num_turns[{r}] = {turns[r].item()} must be a finite, non-negative number of tutor turns.")
