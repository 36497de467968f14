"""The root ``pearl:`` config section and its strict loader.

verl's ``AlgoConfig`` rejects unknown keys, so every plugin setting lives under a root section
(``+pearl.advantage.gamma=0.95`` on a verl command line). Each component gets only its own
sub-config; typos fail at startup with the list of valid keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pearl_verl.advantage.advantage_config import AdvantageConfig
from pearl_verl.advantage.failure_guard import FailureGuardConfig
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.ranges import POSITIVE_OR_NULL, Range, check_ranges
from pearl_verl.strict_dataclass import build_dataclass
from pearl_verl.student.student_config import StudentConfig


@dataclass(frozen=True)
class AgentConfig:
    """Settings of the ``pearl_tutor`` agent loop (root config section ``pearl.agent``).

    Attributes:
        max_tutor_turns: tutor turns before an episode is cut off (paper: 15 in training, 20 in
            evaluation).
        include_reference: show the reference solution to the tutor in its system message.
        max_tokens_per_turn: cap on one tutor turn's tokens; a turn cut there is closed with an
            end-of-turn token the policy is not trained on (mask 0) and the dialogue goes on.
            None: only the episode's response budget (``data.max_response_length``) applies;
            spending that ends the episode as incomplete (``token_budget``).
        seed_turns: give every tutor turn its own sampling seed (vLLM's per-request ``seed``), built from
            ``rollout.seed``, the row, the group member and the turn, so that one seed gives one set of dialogues
            whatever batch a turn lands in; ``pearl_sync`` then also takes each batch in dataset order, so the
            update sums in one order and a run repeats to the last digit. On by default on a CPU
            (``parts/cpu.yaml``); off by default, because with any seeded request vLLM's GPU sampler leaves
            FlashInfer's top-k/top-p kernels for its PyTorch path, and a GPU's batched kernels do not give one
            seed one run anyway.
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "max_tutor_turns": Range(int, why="paper: 15 in training"),
        "max_tokens_per_turn": POSITIVE_OR_NULL,
    }

    max_tutor_turns: int = EpisodeLimits.max_tutor_turns
    include_reference: bool = True
    max_tokens_per_turn: int | None = None
    seed_turns: bool = False

    def __post_init__(self) -> None:
        check_ranges(self, prefix="pearl.agent.")


@dataclass(frozen=True)
class PearlConfig:
    """Everything under the root ``pearl:`` key.

    Attributes:
        advantage: the PEARL estimator's settings.
        agent: the tutor-student agent loop's settings.
        student: the simulated student's settings (offline CPU stand-in by default).
        failure_guard: when to stop a run whose judge or student endpoint keeps failing.
    """

    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    student: StudentConfig = field(default_factory=StudentConfig)
    failure_guard: FailureGuardConfig = field(default_factory=FailureGuardConfig)


def load_pearl_config(section: Mapping[str, Any] | None) -> PearlConfig:
    """Build a :class:`PearlConfig` from a plain mapping (``None`` or empty -> all defaults).

    Raises:
        InputError: for an unknown key (with the closest valid key) or an invalid value.
    """
    return build_dataclass(PearlConfig, section or {}, "pearl")
