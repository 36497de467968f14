"""The ``pearl`` advantage estimator, registered in verl's ``ADV_ESTIMATOR_REGISTRY``.

verl's plain dispatch (``compute_advantage``) hands an estimator only ``token_level_rewards``,
``response_mask``, ``config`` (the ``algorithm`` node) and ``index`` (uid). Called that way, the
estimator falls back to the scalar reward as a single dimension (no turns, all completed): the mode
for scalar reward managers (e.g. verl's rule-based GSM8K reward). The ``pearl_sync`` trainer mode
and the legacy hook pass the per-dimension judge fields as ``pearl_inputs``; that is the path PEARL
training uses. A run whose reward manager is ``pearl_judge`` but whose estimator gets no
``pearl_inputs`` stops (:func:`check_scalar_fallback`): its scalar reward counts a failed
judgement's placeholder 0.0 as a score. A config that does not say which reward manager runs gets
a one-time warning instead.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.core_algos import register_adv_est

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import PearlInputs, breakdown_from_inputs, inputs_from_rows
from pearl_verl.advantage.metrics import advantage_metrics
from pearl_verl.errors import InputError
from pearl_verl.pearl_config import PearlConfig, load_pearl_config
from pearl_verl.verl_plugin.compat import config_root
from pearl_verl.verl_plugin.names import REWARD_MANAGER_NAME

logger = logging.getLogger(__name__)

ESTIMATOR_NAME = "pearl"


@register_adv_est(ESTIMATOR_NAME)
def compute_pearl_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    pearl_inputs: PearlInputs | None = None,
    pearl_config: AdvantageConfig | None = None,
    metrics: dict[str, float] | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PEARL advantage broadcast over response tokens (verl's estimator signature).

    Args:
        token_level_rewards: (bs, response_length); summed to the scalar reward in the fallback.
        response_mask: (bs, response_length), 1 on tutor tokens.
        index: (bs,) group ids (verl's uid).
        config: verl's ``algorithm`` config; the root ``pearl.advantage`` section is read from it
            when ``pearl_config`` is not given.
        pearl_inputs: per-dimension judge fields; None selects the scalar fallback.
        pearl_config: estimator settings; None reads them from ``config``'s root.
        metrics: when given, filled with ``pearl/...`` metrics of this batch.

    Returns:
        (advantages, returns), both (bs, response_length): A_i * response_mask.
    """
    if index is None:
        raise InputError(
            "The pearl estimator needs group ids (verl's 'uid' in non_tensor_batch) to normalise within groups."
        )
    settings = pearl_config if pearl_config is not None else settings_from_algorithm_config(config)
    if pearl_inputs is None:
        check_scalar_fallback(config)
        pearl_inputs = _scalar_inputs(token_level_rewards)
        settings = dataclasses.replace(settings, dims=("reward",), weights=None)
    # The judge fields live on the CPU and the math takes milliseconds there, even for 64k samples.
    breakdown = breakdown_from_inputs(pearl_inputs, index, settings)
    if metrics is not None:
        metrics.update(advantage_metrics(pearl_inputs, breakdown, settings.dims))
    advantages = breakdown.advantages.to(response_mask.device).unsqueeze(-1) * response_mask
    return advantages, advantages


def scalar_advantages(
    algorithm_config: Any,
    index: np.ndarray,
    rows: Sequence[Mapping[str, Any]],
    settings: AdvantageConfig,
    metrics: dict[str, float] | None = None,
    rewards: torch.Tensor | None = None,
    padding: Sequence[bool] | None = None,
) -> torch.Tensor:
    """One advantage per sample from per-sample reward fields, through verl's estimator dispatch.

    Args:
        algorithm_config: verl's ``algorithm`` config; its ``adv_estimator`` is looked up in verl's
            registry and must accept ``pearl_inputs``.
        index: (bs,) group ids.
        rows: per-sample ``reward_extra_info`` dicts.
        settings: the estimator settings.
        metrics: filled with ``pearl/...`` metrics when given.
        rewards: (bs,) scalar rewards, passed as ``token_level_rewards`` (unused by ``pearl``).
        padding: (bs,) True for verl's synthetic padding rows.

    Returns:
        (bs,) float32 advantages A_i.
    """
    estimator = core_algos.get_adv_estimator_fn(algorithm_config.adv_estimator)
    if not accepts_pearl_inputs(estimator):
        raise InputError(
            f"algorithm.adv_estimator={algorithm_config.adv_estimator!r} takes no per-dimension judge fields; "
            f"use algorithm.adv_estimator={ESTIMATOR_NAME}."
        )
    inputs = inputs_from_rows(rows, settings, padding)
    scores = (rewards if rewards is not None else torch.zeros(len(rows))).reshape(-1, 1).float()
    # A one-token mask makes the estimator return its scalar A_i per row.
    scalar, _ = estimator(
        token_level_rewards=scores,
        response_mask=torch.ones_like(scores),
        index=index,
        config=algorithm_config,
        pearl_inputs=inputs,
        pearl_config=settings,
        metrics=metrics,
    )
    return scalar[:, 0]


def check_scalar_fallback(config: Any) -> None:
    """Refuse the scalar fallback when the run's reward manager reports PEARL's per-dimension fields.

    Args:
        config: verl's ``algorithm`` node (its root names the reward manager) or the root itself.
            A config that names no reward manager (not verl's tree) is let through with a
            one-time warning.

    Raises:
        InputError: the reward manager is ``pearl_judge`` (the fields exist but this trainer does
            not forward them; its scalar reward scores a failed judgement 0.0).
    """

    name = reward_manager_name(config_root(config))
    if name is None:
        _warn_unknown_reward_manager()
        return
    if name != REWARD_MANAGER_NAME:
        return
    raise InputError(
        f"reward.reward_manager.name={REWARD_MANAGER_NAME} reports per-dimension judge fields, but the pearl "
        "estimator received only the scalar reward, in which a failed judgement's placeholder 0.0 counts as a "
        "score: verl's plain trainer does not forward the fields. Set trainer.v1.trainer_mode=pearl_sync "
        "(V1 trainer), or launch the legacy trainer through `python -m pearl_verl.verl_plugin.main_ppo "
        "trainer.use_v1=false ...`."
    )


@functools.cache  # once per process: the fallback is legitimate for scalar reward managers
def _warn_unknown_reward_manager() -> None:
    logger.warning(
        "The pearl estimator got no per-dimension judge fields and a config that names no reward manager "
        "(reward.reward_manager.name), so it z-scores the scalar reward. With the pearl_judge reward manager "
        "that counts a failed judgement's 0.0 as a score: use trainer.v1.trainer_mode=pearl_sync."
    )


def reward_manager_name(root: Any) -> str | None:
    """The reward manager a verl config selects (``reward.reward_manager.name``), or None."""
    if not isinstance(root, DictConfig):
        return None
    name = OmegaConf.select(root, "reward.reward_manager.name", default=None)
    return str(name) if name is not None else None


def accepts_pearl_inputs(estimator: Callable[..., Any]) -> bool:
    """Whether an estimator takes per-dimension judge fields (decided by signature, not by name)."""
    return "pearl_inputs" in inspect.signature(estimator).parameters


def settings_from_algorithm_config(config: Any) -> AdvantageConfig:
    """``pearl.advantage`` from the root of verl's config tree, or the defaults."""
    return pearl_config_from_algorithm_config(config).advantage


def pearl_config_from_algorithm_config(config: Any) -> PearlConfig:
    """The root ``pearl:`` section seen from verl's ``algorithm`` node, or the defaults.

    verl passes the ``algorithm`` node; OmegaConf nodes know their root, which holds our section.
    """
    return pearl_config_from_root(config_root(config))


def pearl_config_from_root(root: Any) -> PearlConfig:
    """The root ``pearl:`` section of a verl config (DictConfig or mapping), validated."""
    section = root.get("pearl") if root is not None else None
    if isinstance(section, DictConfig):
        section = OmegaConf.to_container(section, resolve=True)
    return load_pearl_config(section)


def _scalar_inputs(token_level_rewards: torch.Tensor) -> PearlInputs:
    scores = token_level_rewards.detach().sum(dim=-1, keepdim=True).double().cpu()
    bs = scores.shape[0]
    return PearlInputs(
        dim_scores=scores,
        num_turns=torch.zeros(bs, dtype=torch.float64),
        completed=torch.ones(bs, dtype=torch.bool),
        valid=torch.ones(bs, dtype=torch.bool),
    )

