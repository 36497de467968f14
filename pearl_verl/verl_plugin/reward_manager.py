"""``pearl_judge``: the PEARL judge as a reward manager of verl's async reward loop.

Select with ``reward.reward_manager.name=pearl_judge`` and configure with
``+reward.reward_kwargs.<key>=...`` (keys of :class:`pearl_verl.judge.judge_config.JudgeConfig`:
``backend``, ``base_url``, ``model``, ``api_key_env``, ``max_concurrency``, ``timeout_s``,
``max_retries``, ``parse_retries``, ``samples``, ``aggregate``, ...). Unknown keys fail at startup
with the list of valid ones.

Each sample's episode arrives from the ``pearl_tutor`` agent loop as
``non_tensor_batch["tool_extra_fields"][i]["pearl_episode"]`` (an ``EpisodeRecord.to_dict()``);
the manager never decodes tokens. It returns ``reward_score`` (the uniform mean of the 8
dimensions) and ``reward_extra_info`` with always the same keys
(:data:`pearl_verl.judge.reward_info.REWARD_INFO_KEYS`). A row without an episode, or a judgement that
failed, yields ``judge_ok=0`` with placeholder values that the PEARL estimator excludes; the
manager never raises for one bad sample.

``reward.num_workers`` (verl default 8) reward-loop workers each build one manager, hence one
judge client: the judge endpoint sees up to ``num_workers * max_concurrency`` requests at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.judge.judge_config import JudgeConfig, build_judge, judge_config_from_mapping
from pearl_verl.judge.judge_contract import JudgeResult, TutoringJudge
from pearl_verl.judge.reward_info import reward_info, reward_score, should_judge
from pearl_verl.verl_plugin.names import EPISODE_KEY, REWARD_MANAGER_NAME

logger = logging.getLogger(__name__)


_WARN_EVERY = 100  # rows without an episode: warn on the first and then every 100th
_LOG_STATS_EVERY = 1000  # samples between INFO summaries of the judge's counters


@register(REWARD_MANAGER_NAME)
class PearlJudgeRewardManager(RewardManagerBase):
    """Scores whole tutoring dialogues with the PEARL judge.

    Args:
        config: verl's full trainer config; only ``config.reward.reward_kwargs`` is read.
        tokenizer: unused (the episode is read as text from the agent loop's extra fields).
        compute_score: unused (the judge is the score function).
        reward_router_address: passed by verl's reward loop; unused (the judge has its own endpoint).
        reward_model_tokenizer: passed by verl's reward loop; unused.
    """

    def __init__(
        self,
        config: DictConfig,
        tokenizer: Any,
        compute_score: Any,
        reward_router_address: str | None = None,
        reward_model_tokenizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config, tokenizer, compute_score)
        self.judge_config: JudgeConfig = judge_config_from_mapping(_reward_kwargs(config))
        self.judge: TutoringJudge = build_judge(self.judge_config)
        self.scored = 0
        self.rows_without_episode = 0
        self.malformed_episodes = 0
        logger.info("pearl_judge reward manager: backend=%s", self.judge_config.backend)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        """Judge the one dialogue in ``data`` (a one-row DataProto; the last row if several).

        Returns:
            ``{"reward_score": float, "reward_extra_info": {key: scalar}}`` with the same keys for
            every sample.
        """
        episode = self._episode(data)
        result: JudgeResult | None = await self.judge.judge(episode) if should_judge(episode) else None
        info = reward_info(episode, result)
        self.scored += 1
        if self.scored % _LOG_STATS_EVERY == 0:
            stats = getattr(self.judge, "stats", None)
            logger.info(
                "pearl_judge: %d samples scored; judge stats %s", self.scored, stats.snapshot() if stats else {}
            )
        return {"reward_score": reward_score(info), "reward_extra_info": info}

    def _episode(self, data: DataProto) -> EpisodeRecord | None:
        fields = data.non_tensor_batch.get("tool_extra_fields")
        extra = fields[-1] if fields is not None and len(fields) else None
        if not isinstance(extra, Mapping) or EPISODE_KEY not in extra:
            self.rows_without_episode += 1
            if self.rows_without_episode % _WARN_EVERY == 1:
                have = sorted(extra) if isinstance(extra, Mapping) else type(extra).__name__
                logger.warning(
                    "pearl_judge: row has no '%s' in the agent loop's extra_fields (have: %s); scored judge_ok=0 "
                    "(%d such rows so far). Use the pearl_tutor agent loop "
                    "(actor_rollout_ref.rollout.agent.default_agent_loop=pearl_tutor).",
                    EPISODE_KEY,
                    have,
                    self.rows_without_episode,
                )
            return None
        try:
            return EpisodeRecord.from_dict(extra[EPISODE_KEY])
        except (KeyError, TypeError, ValueError) as exc:
            self.malformed_episodes += 1
            logger.warning(
                "pearl_judge: malformed '%s' (%s: %s); scored judge_ok=0.", EPISODE_KEY, type(exc).__name__, exc
            )
            return None


def _reward_kwargs(config: DictConfig) -> dict[str, Any]:
    """``config.reward.reward_kwargs`` as a plain dict ({} when absent)."""
    reward = config.get("reward") if isinstance(config, DictConfig | Mapping) else None
    settings = reward.get("reward_kwargs") if reward is not None else None
    if settings is None:
        return {}
    if isinstance(settings, DictConfig):
        return dict(OmegaConf.to_container(settings, resolve=True))  # type: ignore[arg-type]
    return dict(settings)
