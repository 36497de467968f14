"""Formula tests of the PEARL advantage on hand-computed cases (design.md, "The advantage, exactly")."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from pearl_verl.advantage.estimator import (
    SETTINGS,
    AdvantageConfig,
    compute_pearl_advantage,
    compute_pearl_advantage_breakdown,
    discretize_scores,
)


def test_bins_edges_and_floors():
    scores = torch.tensor([0.0, 0.19999, 0.2, 0.39, 0.4, 0.6, 0.79, 0.8, 0.99, 1.0], dtype=torch.float64)
    rewards, floors = discretize_scores(scores)
    assert rewards.tolist() == pytest.approx([0.1, 0.1, 0.3, 0.3, 0.5, 0.7, 0.7, 0.9, 0.9, 0.9])
    assert floors.tolist() == pytest.approx([0.0, 0.0, 0.2, 0.2, 0.4, 0.6, 0.6, 0.8, 0.8, 0.8])


def test_criterion_means_that_equal_an_edge_land_on_it():
    # 3 criteria of 0.6 and 3/5 are 0.6 in exact arithmetic but not always in floating point.
    means = torch.tensor([(0.6 + 0.6 + 0.6) / 3, 3 / 5, (0.2 + 0.2 + 0.2) / 3, 0.4 * 3 / 3], dtype=torch.float64)
    rewards, floors = discretize_scores(means)
    assert floors.tolist() == pytest.approx([0.6, 0.6, 0.2, 0.4])
    assert rewards.tolist() == pytest.approx([0.7, 0.7, 0.3, 0.5])


def _rewards(scores, turns, completed, index, **kw):
    return compute_pearl_advantage_breakdown(torch.tensor(scores), turns, completed, index, **kw).rewards


def test_decay_acts_only_above_the_bin_floor():
    # s=0.5 -> r'=0.5, l=0.4; two more turns than N_min at gamma 0.9 -> 0.4 + 0.1 * 0.81
    r = _rewards([[0.5], [0.5]], [4, 6], [True, True], ["g", "g"], gamma=0.9)
    assert r[:, 0].tolist() == pytest.approx([0.5, 0.481])


def test_n_min_over_completed_members_only_and_exponent_clamped_at_zero():
    # the incomplete 3-turn member does not set N_min (5); its own exponent 3-5 clamps to 0
    r = _rewards([[0.9], [0.9], [0.9]], [3, 5, 8], [False, True, True], ["g"] * 3, gamma=0.5)
    assert r[:, 0].tolist() == pytest.approx([0.9, 0.9, 0.8 + 0.1 * 0.5**3])


def test_no_completed_member_means_no_decay():
    r = _rewards([[0.9], [0.3]], [3, 9], [False, False], ["g", "g"], gamma=0.5)
    assert r[:, 0].tolist() == pytest.approx([0.9, 0.3])


def test_invalid_member_does_not_set_n_min():
    bd = compute_pearl_advantage_breakdown(
        torch.tensor([[0.9], [0.9], [float("nan")]]), [5, 7, 1], [True, True, True], ["g"] * 3,
        gamma=0.5, valid=[True, True, False],
    )
    assert bd.rewards[:2, 0].tolist() == pytest.approx([0.9, 0.8 + 0.1 * 0.25])
    assert math.isnan(bd.rewards[2, 0].item())


def test_decay_is_per_group():
    r = _rewards([[0.9], [0.9], [0.9], [0.9]], [2, 4, 10, 12], [True] * 4, ["a", "a", "b", "b"], gamma=0.5)
    assert r[:, 0].tolist() == pytest.approx([0.9, 0.825, 0.9, 0.825])


def test_gamma_one_switches_decay_off():
    r = _rewards([[0.9], [0.9]], [1, 15], [True, True], ["g", "g"], gamma=1.0)
    assert r[:, 0].tolist() == pytest.approx([0.9, 0.9])


def test_without_discretization_decay_still_stops_at_bin_floor():
    r = _rewards([[0.55], [0.55]], [1, 2], [True, True], ["g", "g"], gamma=0.5, discretize=False)
    assert r[:, 0].tolist() == pytest.approx([0.55, 0.4 + 0.15 * 0.5])


def test_hand_computed_two_dimensions():
    # dim 0: r' = [.9, .5, .1] -> z = [1, 0, -1]; dim 1: r' = [.3, .5, .7] -> z = [-1, 0, 1] (std 0.4)
    scores = [[0.9, 0.3], [0.5, 0.5], [0.1, 0.7]]
    common = dict(num_turns=[1, 1, 1], completed=[True] * 3, index=["g"] * 3, gamma=1.0)
    bd = compute_pearl_advantage_breakdown(torch.tensor(scores), **common)
    assert bd.dim_advantages.tolist() == [pytest.approx([1, -1], abs=1e-5), pytest.approx([0, 0], abs=1e-5),
                                          pytest.approx([-1, 1], abs=1e-5)]
    assert bd.advantages.tolist() == pytest.approx([0, 0, 0], abs=1e-5)
    weighted = compute_pearl_advantage(torch.tensor(scores), weights=[0.75, 0.25], **common)
    assert weighted.tolist() == pytest.approx([0.5, 0.0, -0.5], abs=1e-5)


def test_weights_per_sample():
    scores = torch.tensor([[0.9, 0.3], [0.5, 0.5], [0.1, 0.7]])
    w = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    adv = compute_pearl_advantage(scores, [1, 1, 1], [True] * 3, ["g"] * 3, gamma=1.0, weights=w)
    assert adv.tolist() == pytest.approx([1.0, 0.0, 1.0], abs=1e-5)


def test_invalid_members_are_excluded_and_get_zero():
    # valid members .9 and .5: mean .7, unbiased std .2 * sqrt(2)
    scores = torch.tensor([[0.9], [0.5], [float("nan")]])
    adv = compute_pearl_advantage(scores, [1, 1, 1], [True] * 3, ["g"] * 3, valid=[True, True, False])
    z = 0.2 / (0.2 * math.sqrt(2))
    assert adv.tolist() == pytest.approx([z, -z, 0.0], abs=1e-5)


def test_group_of_one_gives_zero():
    adv = compute_pearl_advantage(torch.tensor([[0.9], [0.1], [0.5]]), [1, 1, 1], [True] * 3, ["a", "b", "b"])
    assert adv[0].item() == 0.0
    assert adv[1:].tolist() == pytest.approx([-0.70710, 0.70710], abs=1e-4)


def test_group_with_one_valid_member_gives_zero():
    bd = compute_pearl_advantage_breakdown(
        torch.tensor([[0.9], [0.1]]), [1, 1], [True, True], ["a", "a"], valid=[True, False]
    )
    assert bd.advantages.tolist() == [0.0, 0.0]
    assert bd.groups_without_contrast == 1


def test_all_equal_group_gives_zero():
    adv = compute_pearl_advantage(torch.full((4, 8), 0.7), [3] * 4, [True] * 4, ["g"] * 4)
    assert adv.tolist() == [0.0] * 4


def test_reward_aggregation_is_one_zscore_of_the_mean_reward():
    scores = torch.tensor([[0.9, 0.1], [0.5, 0.5], [0.1, 0.1]])
    common = dict(num_turns=[1, 1, 1], completed=[True] * 3, index=["g"] * 3, gamma=1.0)
    by_reward = compute_pearl_advantage(scores, aggregation="reward", **common)
    # mean rewards [.5, .5, .1]: mean .36667, unbiased std .23094
    assert by_reward.tolist() == pytest.approx([0.57735, 0.57735, -1.15470], abs=1e-4)
    by_adv = compute_pearl_advantage(scores, aggregation="advantage", **common)
    # dim 0 -> [1, 0, -1]; dim 1 [.1, .5, .1] -> [-.57735, 1.1547, -.57735]
    assert by_adv.tolist() == pytest.approx([0.21132, 0.57735, -0.78868], abs=1e-4)


def test_output_is_float32_on_input_device_and_accepts_numpy_and_lists():
    scores = np.array([[0.9, 0.2], [0.4, 0.6]], dtype=np.float32)
    uid = np.array(["x", "x"], dtype=object)
    adv = compute_pearl_advantage(scores, np.array([2, 3]), np.array([1, 0]), uid)
    assert adv.dtype == torch.float32 and adv.shape == (2,)
    same = compute_pearl_advantage(scores.tolist(), [2, 3], [True, False], ["x", "x"])
    assert torch.equal(adv, same)


def test_integer_and_tensor_group_ids_match_string_ids():
    scores = torch.tensor([[0.9], [0.1], [0.5], [0.3]])
    by_str = compute_pearl_advantage(scores, [1] * 4, [True] * 4, ["a", "a", "b", "b"])
    by_int = compute_pearl_advantage(scores, [1] * 4, [True] * 4, torch.tensor([7, 7, 3, 3]))
    by_mixed = compute_pearl_advantage(scores, [1] * 4, [True] * 4, np.array([1, 1, "b", "b"], dtype=object))
    assert torch.equal(by_str, by_int) and torch.equal(by_str, by_mixed)


def test_empty_batch():
    adv = compute_pearl_advantage(torch.zeros(0, 8), [], [], [])
    assert adv.shape == (0,) and adv.dtype == torch.float32


_CHANGED = {"gamma": 0.5, "epsilon": 0.5, "discretize": False, "aggregation": "reward"}


@pytest.mark.parametrize("name", SETTINGS)
def test_each_setting_of_the_config_reaches_the_estimator(name):
    # One object carries the settings from the config to the math: a setting given through the config acts as the
    # same setting given by name, and differs from the default (so a field the estimator dropped would fail here).
    scores = torch.tensor([[0.55, 0.1], [0.9, 0.35], [0.3, 0.7], [0.75, 0.5]])
    args = (scores, [2, 5, 3, 7], [True, True, False, True], ["g", "g", "g", "g"])
    through_config = compute_pearl_advantage_breakdown(*args, config=AdvantageConfig(**{name: _CHANGED[name]}))
    by_name = compute_pearl_advantage_breakdown(*args, **{name: _CHANGED[name]})
    default = compute_pearl_advantage_breakdown(*args)
    assert torch.equal(through_config.advantages, by_name.advantages)
    assert torch.equal(through_config.rewards.nan_to_num(), by_name.rewards.nan_to_num())
    assert not torch.allclose(through_config.advantages, default.advantages)


def test_every_config_field_is_a_setting_an_argument_or_the_readers():
    assert set(SETTINGS) == {f.name for f in dataclasses.fields(AdvantageConfig)} - {"dims", "weights"}
    assert set(_CHANGED) == set(SETTINGS)


def test_the_configs_weights_apply_unless_the_call_gives_its_own():
    scores = torch.tensor([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    common = ([1, 1, 1], [True] * 3, ["g"] * 3)
    config = AdvantageConfig(dims=("a", "b"), weights=(0.75, 0.25))
    assert torch.equal(compute_pearl_advantage(scores, *common, config=config),
                       compute_pearl_advantage(scores, *common, weights=[0.75, 0.25]))
    assert torch.equal(compute_pearl_advantage(scores, *common, config=config, weights=[0.5, 0.5]),
                       compute_pearl_advantage(scores, *common))


def test_an_unknown_or_positional_setting_is_refused():
    common = (torch.tensor([[0.5], [0.7]]), [1, 1], [True, True], ["g", "g"])
    with pytest.raises(ValueError, match=r"unknown estimator setting\(s\) \['gama'\]; the settings are \['gamma'"):
        compute_pearl_advantage(*common, gama=0.9)
    with pytest.raises(TypeError):
        compute_pearl_advantage(*common, 0.9)  # gamma by position once: now it must be named
