"""Bad inputs to the estimator raise ValueError naming the offending field."""

import numpy as np
import pytest
import torch

from pearl_verl.advantage.estimator import AdvantageConfig, compute_pearl_advantage


def _call(**overrides):
    kwargs = dict(
        dim_scores=torch.tensor([[0.5, 0.5], [0.9, 0.1]]),
        num_turns=[2, 3],
        completed=[True, True],
        index=["g", "g"],
    )
    kwargs.update(overrides)
    return compute_pearl_advantage(**kwargs)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"dim_scores": torch.tensor([0.5, 0.5])}, r"dim_scores has shape \(2,\)"),
        ({"dim_scores": torch.zeros(2, 0)}, r"dim_scores has shape \(2, 0\)"),
        ({"dim_scores": torch.tensor([[0.5, float("nan")], [0.9, 0.1]])}, r"dim_scores\[0, 1\] = nan is not finite"),
        ({"dim_scores": torch.tensor([[0.5, 0.5], [float("inf"), 0.1]])}, r"dim_scores\[1, 0\] = inf"),
        ({"dim_scores": torch.tensor([[0.5, 1.2], [0.9, 0.1]])}, r"dim_scores\[0, 1\] = 1\.2 is outside \[0, 1\]"),
        ({"dim_scores": torch.tensor([[0.5, 0.5], [-0.1, 0.1]])}, r"dim_scores\[1, 0\] = -0\.1 is outside"),
        ({"dim_scores": torch.tensor([[True, False], [True, True]])}, r"dim_scores has dtype torch.bool"),
        ({"num_turns": [2]}, r"num_turns has shape \(1,\); expected \(2,\)"),
        ({"num_turns": [2, -1]}, r"num_turns\[1\] = -1\.0 must be a finite, non-negative"),
        ({"num_turns": [float("nan"), 1]}, r"num_turns\[0\] = nan"),
        ({"completed": [True, True, False]}, r"completed has shape \(3,\)"),
        ({"completed": [1, 2]}, r"completed\[1\] = 2\.0; completed must be boolean"),
        ({"valid": [1, 0.5]}, r"valid\[1\] = 0\.5; valid must be boolean"),
        ({"index": ["g"]}, r"index has 1 entries but dim_scores has 2 rows"),
        ({"index": [["g"], ["g"]]}, r"index has shape \(2, 1\)"),
        ({"gamma": 0.0}, r"gamma=0\.0: a finite number greater than 0 and at most 1 \(the per-turn decay factor"),
        ({"gamma": 1.5}, r"gamma=1\.5: a finite number greater than 0 and at most 1 \(the per-turn decay factor"),
        ({"gamma": float("nan")}, r"gamma=nan: a finite number greater than 0 and at most 1 \(the per-turn decay factor"),
        ({"gamma": True}, r"gamma=True is a boolean, not a number"),
        ({"gamma": "0.9"}, r"gamma='0\.9' has type str, not a number"),
        ({"epsilon": np.bool_(True)}, r"epsilon=True is a boolean"),
        ({"epsilon": 0.0}, r"epsilon=0\.0: a finite number greater than 0"),
        ({"aggregation": "sum"}, r"aggregation='sum' is not one of \['advantage', 'reward'\]"),
        ({"weights": [0.5, 0.6]}, r"weights row 0 sums to 1\.1, not 1"),
        ({"weights": [[0.5, 0.5], [0.9, 0.0]]}, r"weights row 1 sums to 0\.9, not 1"),
        ({"weights": [1.5, -0.5]}, r"weights must be finite and non-negative"),
        ({"weights": [0.2, 0.3, 0.5]}, r"weights has shape \(1, 3\)|weights has shape \(3,\)"),
    ],
)
def test_bad_input_names_the_field(overrides, match):
    with pytest.raises(ValueError, match=match):
        _call(**overrides)


def test_invalid_rows_may_hold_nan_and_any_turns():
    adv = _call(
        dim_scores=torch.tensor([[0.5, 0.5], [0.9, 0.1], [float("nan"), float("nan")]]),
        num_turns=[2, 3, float("nan")],
        completed=[True, True, False],
        index=["g"] * 3,
        valid=[True, True, False],
    )
    assert adv[2].item() == 0.0 and torch.isfinite(adv).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gamma": 0.0}, r"pearl\.advantage\.gamma=0\.0"),
        ({"epsilon": -1.0}, r"pearl\.advantage\.epsilon=-1\.0"),
        ({"aggregation": "mean"}, r"pearl\.advantage\.aggregation='mean'"),
        ({"dims": ()}, r"pearl\.advantage\.dims=\[\] must be a non-empty list"),
        ({"dims": ("acc", "acc")}, r"distinct names"),
        ({"weights": (0.5, 0.5)}, r"pearl\.advantage\.weights has 2 entries but dims has 8"),
        ({"dims": ("a", "b"), "weights": (0.7, 0.7)}, r"pearl\.advantage\.weights row 0 sums to 1\.4"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AdvantageConfig(**kwargs)


def test_config_normalises_sequences_to_tuples():
    cfg = AdvantageConfig(dims=["a", "b"], weights=[0.25, 0.75])
    assert cfg.dims == ("a", "b") and cfg.weights == (0.25, 0.75)
    hash(cfg)  # frozen and hashable: safe to share across workers


@pytest.mark.parametrize("gamma", [torch.tensor(0.9), torch.tensor([0.9]), np.float32(0.9), np.float64(0.9)])
def test_a_gamma_from_torch_or_numpy_is_its_number(gamma):
    ref = _call(gamma=0.9)
    assert torch.allclose(_call(gamma=gamma), ref)
    assert AdvantageConfig(gamma=gamma).gamma == pytest.approx(0.9) and type(AdvantageConfig(gamma=gamma).gamma) is float
