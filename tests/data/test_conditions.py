"""The student-condition sampler: balanced abilities, reproducible, misconceptions as configured."""

import random
from collections import Counter

import pytest

from pearl_verl.data.conditions import ConditionSampler, profiles_of
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS


def test_profiles_partition_all_243():
    groups = {level: profiles_of(level) for level in ABILITY_LEVELS}
    assert sum(len(g) for g in groups.values()) == 3**5
    assert all(p.ability == level for level, g in groups.items() for p in g)


def test_abilities_follow_the_mix_and_runs_repeat():
    sampler = ConditionSampler(ability_mix={"low": 0.5, "medium": 0.0, "high": 0.5})
    conditions = [sampler.sample(random.Random(7)) for _ in range(1)] + [sampler.sample(random.Random(7))]
    assert conditions[0] == conditions[1]
    rng = random.Random(0)
    counts = Counter(sampler.sample(rng).profile.ability for _ in range(2000))
    assert counts["medium"] == 0 and abs(counts["low"] - 1000) < 100


def test_misconception_rate():
    rng = random.Random(1)
    never = ConditionSampler(misconception_rate=0.0)
    always = ConditionSampler()
    assert never.sample(rng, "2+3=6").misconception is None
    assert always.sample(rng, "2+3=6").misconception == "2+3=6"
    assert always.sample(rng, None).misconception is None


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"ability_mix": {"low": 1.0, "genius": 0.0}}, "must give non-negative probabilities"),
    ({"ability_mix": {"low": 0.5}}, "summing to 1"),
    ({"misconception_rate": 1.5}, "misconception_rate=1.5"),
])
def test_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ConditionSampler(**kwargs)
