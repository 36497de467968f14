"""The ``pearl`` estimator through verl's own dispatch, and equivalence with verl's GRPO."""

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import PearlInputs
from pearl_verl.verl_plugin.adv_estimator import compute_pearl_outcome_advantage, settings_from_algorithm_config


def _token_rewards(scores, length=5):
    """Outcome rewards at the last valid token, as verl's reward loop writes them."""
    rewards = torch.zeros(len(scores), length)
    rewards[:, -1] = torch.tensor(scores)
    return rewards


def _batch(scores, uids, mask=None):
    mask = torch.ones(len(scores), 5, dtype=torch.int64) if mask is None else mask
    return DataProto.from_dict(
        tensors={"token_level_rewards": _token_rewards(scores), "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )


def test_plain_dispatch_reaches_pearl_and_masks_non_tutor_tokens():
    mask = torch.tensor([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 0, 0]])
    data = _batch([0.9, 0.1, 0.5, 0.5], ["a", "a", "b", "b"], mask)
    out = compute_advantage(data, adv_estimator="pearl", config=OmegaConf.create({"gamma": 1.0}))
    # r' = .9 and .1 in group a -> z = +-0.7071; group b is all-equal -> 0; masked tokens get 0
    expected = torch.tensor([0.70710678, -0.70710678, 0.0, 0.0]).unsqueeze(1) * mask
    torch.testing.assert_close(out.batch["advantages"], expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(out.batch["returns"], expected, atol=1e-5, rtol=0)


def test_scalar_fallback_without_discretisation_equals_verl_grpo():
    gen = torch.Generator().manual_seed(0)
    scores = torch.rand(64, generator=gen).tolist()
    uids = [f"q{i // 8}" for i in range(64)]
    mask = (torch.rand(64, 5, generator=gen) > 0.3).long()
    grpo, _ = core_algos.compute_grpo_vectorized_outcome_advantage(_token_rewards(scores), mask, np.array(uids, dtype=object))
    pearl, _ = compute_pearl_outcome_advantage(
        _token_rewards(scores), mask, index=np.array(uids, dtype=object),
        pearl_config=AdvantageConfig(discretize=False, gamma=1.0),
    )
    torch.testing.assert_close(pearl, grpo, atol=1e-5, rtol=1e-5)


def test_multi_dimension_without_discretisation_equals_weighted_sum_of_verl_grpo():
    # With dis() and the turn penalty off, PEARL's aggregation is GDPO's step 1-2 (no whitening).
    gen = torch.Generator().manual_seed(1)
    bs, k = 32, 3
    dims = torch.rand(bs, k, generator=gen, dtype=torch.float64)
    uids = np.array([f"q{i // 4}" for i in range(bs)], dtype=object)
    mask = torch.ones(bs, 5, dtype=torch.int64)
    weights = (0.5, 0.3, 0.2)
    expected = sum(
        w * core_algos.compute_grpo_outcome_advantage(_token_rewards(dims[:, j].tolist()), mask, uids)[0]
        for j, w in enumerate(weights)
    )
    inputs = PearlInputs(dims, torch.zeros(bs, dtype=torch.float64), torch.ones(bs, dtype=torch.bool), torch.ones(bs, dtype=torch.bool))
    got, _ = compute_pearl_outcome_advantage(
        _token_rewards([0.0] * bs), mask, index=uids, pearl_inputs=inputs,
        pearl_config=AdvantageConfig(dims=("a", "b", "c"), weights=weights, discretize=False, gamma=1.0),
    )
    torch.testing.assert_close(got, expected.float(), atol=1e-5, rtol=1e-5)


def test_plain_dispatch_reads_the_root_pearl_section():
    root = OmegaConf.create({"algorithm": {"adv_estimator": "pearl"}, "pearl": {"advantage": {"discretize": False}}})
    assert settings_from_algorithm_config(root.algorithm).discretize is False
    assert settings_from_algorithm_config(OmegaConf.create({"gamma": 1.0})) == AdvantageConfig()
    bad = OmegaConf.create({"algorithm": {}, "pearl": {"advantage": {"gama": 0.9}}})
    with pytest.raises(ValueError, match=r"Unknown setting pearl\.advantage\.gama\. Did you mean pearl\.advantage\.gamma\?"):
        settings_from_algorithm_config(bad.algorithm)


def test_out_of_range_scalar_reward_is_a_clear_error():
    with pytest.raises(ValueError, match=r"dim_scores\[0, 0\] = 3 is outside \[0, 1\]"):
        compute_advantage(_batch([3.0, 0.0], ["a", "a"]), adv_estimator="pearl", config=OmegaConf.create({}))


def test_missing_uid_is_a_clear_error():
    with pytest.raises(ValueError, match="needs group ids"):
        compute_pearl_outcome_advantage(_token_rewards([0.5]), torch.ones(1, 5))


def test_metrics_are_filled_when_asked():
    metrics = {}
    compute_pearl_outcome_advantage(
        _token_rewards([0.9, 0.1]), torch.ones(2, 5), index=np.array(["a", "a"], dtype=object), metrics=metrics
    )
    assert metrics["pearl/judge/failure_rate"] == 0.0
    assert metrics["pearl/reward/reward/mean"] == pytest.approx(0.5)
    assert metrics["pearl/advantage/max"] == pytest.approx(0.70710, abs=1e-4)


def test_scalar_fallback_refuses_pearl_judge_rewards_whatever_launched_it(verl_config):
    # plain verl.trainer.main_ppo skips pearl's checks; the first advantage step must still stop
    data = _batch([0.9, 0.0], ["a", "a"])  # 0.0: a failed judgement's placeholder, indistinguishable here
    judged = verl_config(["algorithm.adv_estimator=pearl", "reward.reward_manager.name=pearl_judge"])
    with pytest.raises(ValueError, match=r"received only the scalar reward.*trainer\.v1\.trainer_mode=pearl_sync"):
        compute_advantage(data, adv_estimator="pearl", config=judged.algorithm)
    scalar = verl_config(["algorithm.adv_estimator=pearl", "reward.reward_manager.name=naive"])
    out = compute_advantage(data, adv_estimator="pearl", config=scalar.algorithm)
    assert out.batch["advantages"][0, 0] > 0 > out.batch["advantages"][1, 0]  # rule-based rewards keep the fallback


def test_v1_sync_trainers_own_advantage_step_refuses_pearl_judge_rewards(verl_config):
    # verl's V1 `sync` mode (plain verl.trainer.main_ppo, no pearl_sync): PPOTrainer._compute_advantage
    # builds this DataProto from TransferQueue (no reward_extra_info) and dispatches through
    # compute_advantage_for_multi_trajectories -> get_adv_estimator_fn("pearl")
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    rm_scores = _token_rewards([0.9, 0.0, 0.5, 0.5])  # 0.0: a failed judgement's placeholder
    data = DataProto.from_dict(
        tensors={"token_level_scores": rm_scores, "token_level_rewards": rm_scores,
                 "response_mask": torch.ones(4, 5, dtype=torch.int64)},
        non_tensors={"uid": np.array(["a", "a", "b", "b"], dtype=object)},
    )
    keys = ["a_0_0", "a_1_0", "b_2_0", "b_3_0"]

    def step(*overrides):
        cfg = verl_config(["algorithm.adv_estimator=pearl", "trainer.v1.trainer_mode=sync", *overrides])
        return compute_advantage_for_multi_trajectories(
            data, batch_keys=keys, adv_estimator=cfg.algorithm.adv_estimator, config=cfg.algorithm
        )

    with pytest.raises(ValueError, match=r"received only the scalar reward.*Set trainer\.v1\.trainer_mode=pearl_sync"):
        step("reward.reward_manager.name=pearl_judge")
    out = step("reward.reward_manager.name=naive")  # a scalar reward manager keeps the fallback
    assert out.batch["advantages"][0, 0] > 0 > out.batch["advantages"][1, 0]


def test_fallback_without_a_named_reward_manager_warns_once(caplog):
    from pearl_verl.verl_plugin import adv_estimator as estimator

    estimator._warn_unknown_reward_manager.cache_clear()
    fn = core_algos.get_adv_estimator_fn("pearl")
    with caplog.at_level("WARNING", logger=estimator.__name__):
        for _ in range(2):  # the kwargs verl's compute_advantage passes
            fn(token_level_rewards=_token_rewards([0.9, 0.1]), response_mask=torch.ones(2, 5),
               config=OmegaConf.create({"gamma": 1.0}), index=np.array(["a", "a"], dtype=object))
    warnings = [r for r in caplog.records if r.name == estimator.__name__]
    assert len(warnings) == 1 and "names no reward manager" in warnings[0].getMessage()
    assert "trainer.v1.trainer_mode=pearl_sync" in warnings[0].getMessage()
