"""The root ``pearl:`` section loads strictly."""

import pytest

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.pearl_config import PearlConfig, load_pearl_config


def test_defaults():
    assert load_pearl_config(None) == PearlConfig() == load_pearl_config({})
    assert load_pearl_config(None).advantage == AdvantageConfig(gamma=0.98)


def test_nested_values_and_lists():
    cfg = load_pearl_config({"advantage": {"gamma": 0.9, "dims": ["x", "y"], "weights": [0.5, 0.5]}})
    assert cfg.advantage == AdvantageConfig(gamma=0.9, dims=("x", "y"), weights=(0.5, 0.5))


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ({"advantag": {}}, r"Unknown setting pearl\.advantag\. Did you mean pearl\.advantage\?"),
        ({"advantage": {"discretise": False}}, r"pearl\.advantage\.discretise\. Did you mean pearl\.advantage\.discretize\?"),
        ({"advantage": {"zzz": 1}}, r"Unknown setting pearl\.advantage\.zzz\. Valid keys: \['aggregation'"),
        ({"advantage": 0.9}, r"pearl\.advantage must be a mapping"),
        ({"advantage": {"gamma": 2}}, r"pearl\.advantage\.gamma=2: a finite number greater than 0 and at most 1 \(the per-turn decay factor"),
    ],
)
def test_errors_name_the_key(section, match):
    with pytest.raises(ValueError, match=match):
        load_pearl_config(section)
