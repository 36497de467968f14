"""Names the plugin's parts share: with verl (registry names) and with each other (a row's extra fields).

It imports nothing, so each part can take a name from here without importing another part: the agent
loop writes :data:`EPISODE_KEY` that the reward manager reads, and the estimator checks that the
reward manager named :data:`REWARD_MANAGER_NAME` is the one in use.
"""

EPISODE_KEY = "pearl_episode"
"""The agent loop's extra field that carries the whole dialogue (``EpisodeRecord.to_dict()``)."""

REWARD_MANAGER_NAME = "pearl_judge"
"""The reward manager's name in verl's registry (``reward.reward_manager.name``)."""

END_REASON_KEY = "pearl_end_reason"
"""The agent loop's extra field with how the dialogue ended (``EpisodeRecord.end_reason``)."""

REWARD_INFO_FIELD = "reward_extra_info"
"""Where verl's reward loop puts a sample's reward fields among its extra fields (V1 trainer)."""

VALIDATION_TIME_KEY = "val-aux/pearl/validation_s"
"""The ``pearl_sync`` trainer's metric of how long a validation took (verl times only those inside a step, as
``timing_s/testing``, not the one before training)."""
