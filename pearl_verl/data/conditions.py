"""The student-condition sampler: which simulated student each problem is tutored with.

A condition fixes the cognitive profile (five traits, 1-3 each) and a seed from which the
simulator draws the initial mastery; every member of a verl group shares it. The sampler draws:
- the ability level from ``ability_mix`` (default: low, medium and high equally often), then a
  profile uniformly among the profiles whose trait sum falls in that level (low 5-8, medium
  9-11, high 12-15), so abilities are balanced even though mid-range sums are more common;
- a misconception start when the source provides one (MathDial's real incorrect student
  solutions), with probability ``misconception_rate``.
Everything is drawn from one ``random.Random``, so a dataset is reproducible from its seed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, TRAITS, CognitiveProfile, StudentCondition
from pearl_verl.errors import InputError


@dataclass(frozen=True)
class ConditionSampler:
    """Settings of the sampler.

    Attributes:
        ability_mix: probability of each ability level (keys from ABILITY_LEVELS, summing to 1).
        misconception_rate: probability of starting from the source's misconception when it has one.
    """

    ability_mix: Mapping[str, float] = field(default_factory=lambda: {level: 1 / 3 for level in ABILITY_LEVELS})
    misconception_rate: float = 1.0

    def __post_init__(self) -> None:
        unknown = set(self.ability_mix) - set(ABILITY_LEVELS)
        if unknown or abs(sum(self.ability_mix.values()) - 1.0) > 1e-6 or min(self.ability_mix.values()) < 0:
            raise InputError(
                f"ability_mix={dict(self.ability_mix)} must give non-negative probabilities summing to 1 over "
                f"{list(ABILITY_LEVELS)}."
            )
        if not 0.0 <= self.misconception_rate <= 1.0:
            raise InputError(f"misconception_rate={self.misconception_rate} must lie in [0, 1].")

    def sample(self, rng: random.Random, misconception: str | None = None) -> StudentCondition:
        """One condition; ``misconception`` is the source's, used with ``misconception_rate``."""
        levels = list(self.ability_mix)
        level = rng.choices(levels, weights=[self.ability_mix[lv] for lv in levels])[0]
        return StudentCondition(
            profile=rng.choice(profiles_of(level)),
            mastery=None,
            seed=rng.randrange(2**31),
            misconception=misconception if misconception and rng.random() < self.misconception_rate else None,
        )


@lru_cache(maxsize=None)
def profiles_of(level: str) -> tuple[CognitiveProfile, ...]:
    """Every profile (3^5 = 243 in all) of one ability level."""
    if level not in ABILITY_LEVELS:
        raise InputError(f"Unknown ability level {level!r}; expected one of {list(ABILITY_LEVELS)}.")
    profiles = (CognitiveProfile(**dict(zip(TRAITS, values))) for values in itertools.product((1, 2, 3), repeat=5))
    return tuple(p for p in profiles if p.ability == level)
