"""The five advantage estimators compared, each one advantage per episode from the judge's 8 scores.

- ``grpo_mean`` (paper T4): the mean of the 8 dimension scores as one reward, through verl's own
  ``compute_grpo_vectorized_outcome_advantage`` (group z-score, unbiased std).
- ``gdpo``: verl's GDPO (``compute_gdpo_outcome_advantage``): a GRPO z-score per dimension, their
  sum, then whitening over the batch with verl's ``masked_whiten``.
- ``pearl_raw`` (T5): :func:`pearl_verl.advantage.compute_pearl_advantage` without discretisation
  or turn penalty: per-dimension group z-scores, then their mean.
- ``pearl`` (T6): with the paper's discretisation.
- ``pearl_turn`` (T7): with discretisation and the turn-count penalty, gamma = 0.98.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from pearl_verl.advantage.estimator import AdvantageConfig, compute_pearl_advantage

METHODS: tuple[str, ...] = ("grpo_mean", "gdpo", "pearl_raw", "pearl", "pearl_turn")
LABELS: dict[str, str] = {
    "grpo_mean": "(a) mean reward + GRPO",
    "gdpo": "(b) GDPO (verl)",
    "pearl_raw": "(c) PEARL, no discretisation",
    "pearl": "(d) PEARL",
    "pearl_turn": "(e) PEARL + turn penalty",
}
PAPER_GAMMA = AdvantageConfig.gamma

Estimator = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray], torch.Tensor]


def advantages(method: str, scores: torch.Tensor, turns: torch.Tensor, completed: torch.Tensor,
               index: np.ndarray) -> torch.Tensor:
    """(B,) float32 advantages.

    Args:
        method: one of :data:`METHODS`.
        scores: (B, K) dimension scores in [0, 1].
        turns: (B,) tutor turns.
        completed: (B,) bool.
        index: (B,) group ids.

    Raises:
        ValueError: for an unknown method.
    """
    if method not in ESTIMATORS:
        raise ValueError(f"method={method!r} is not one of {list(METHODS)}.")
    return ESTIMATORS[method](scores, turns, completed, index)


def _verl() -> object:
    from verl.trainer.ppo import core_algos  # imported on first use: verl takes seconds to import

    return core_algos


def _grpo_mean(scores: torch.Tensor, turns: torch.Tensor, completed: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    reward = scores.mean(dim=1, keepdim=True).float()
    mask = torch.ones_like(reward)
    advantage, _ = _verl().compute_grpo_vectorized_outcome_advantage(reward, mask, index)
    return advantage[:, 0]


def _gdpo(scores: torch.Tensor, turns: torch.Tensor, completed: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """verl's GDPO formula from verl's own parts: a GRPO z-score per dimension, summed, whitened.

    ``compute_gdpo_outcome_advantage`` runs its per-dimension GRPO as a Python loop over samples
    (70 ms per 512-sample batch); the vectorised GRPO gives the same z-scores (the tiny test checks
    this function against ``compute_gdpo_outcome_advantage`` itself).
    """
    core_algos = _verl()
    from verl.utils.torch_functional import masked_whiten

    mask = torch.ones(scores.shape[0], 1)
    total = torch.zeros(scores.shape[0], 1)
    for k in range(scores.shape[1]):
        z, _ = core_algos.compute_grpo_vectorized_outcome_advantage(scores[:, k : k + 1].float(), mask, index)
        total += z
    return (masked_whiten(total, mask) * mask)[:, 0]


def verl_gdpo(scores: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """(B,) verl's ``compute_gdpo_outcome_advantage`` itself on (B, K) scores (the reference for tests)."""
    b, k = scores.shape
    keys = [f"dim{j}" for j in range(k)]
    # verl reads each dimension from non_tensor_batch and places it on the last response token,
    # found from the attention mask after the prompt: a one-token response here.
    batch = {"prompts": torch.zeros(b, 1, dtype=torch.long), "attention_mask": torch.ones(b, 2, dtype=torch.long)}
    advantage, _ = _verl().compute_gdpo_outcome_advantage(
        token_level_rewards=torch.zeros(b, 1),
        response_mask=torch.ones(b, 1),
        index=index,
        config={"gdpo_reward_keys": keys},
        non_tensor_batch={key: scores[:, j].numpy() for j, key in enumerate(keys)},
        batch=batch,
    )
    return advantage[:, 0]


def _pearl(discretize: bool, gamma: float) -> Estimator:
    def estimate(scores: torch.Tensor, turns: torch.Tensor, completed: torch.Tensor, index: np.ndarray) -> torch.Tensor:
        return compute_pearl_advantage(scores, turns, completed, index, gamma=gamma, discretize=discretize)

    return estimate


ESTIMATORS: dict[str, Estimator] = {
    "grpo_mean": _grpo_mean,
    "gdpo": _gdpo,
    "pearl_raw": _pearl(discretize=False, gamma=1.0),
    "pearl": _pearl(discretize=True, gamma=1.0),
    "pearl_turn": _pearl(discretize=True, gamma=PAPER_GAMMA),
}
