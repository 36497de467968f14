"""The student simulator's public contract: profile, condition, per-turn state, and the protocols.

The agent loop, the SFT generator, the evaluations and the judge depend only on this module; the
simulator's internals (knowledge graph, planner, realiser, backends) live in :mod:`pearl_verl.student`. It sits in
``dialogue``, below the student, because a dialogue's records and its runner hold these types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from pearl_verl.dialogue.problem import Problem
from pearl_verl.errors import InputError

TRAITS: tuple[str, ...] = ("activeness", "perseverance", "comprehension", "expressiveness", "attention")
"""The paper's five-trait cognitive profile c; each trait is 1 (low), 2 (medium) or 3 (high)."""

ABILITY_LEVELS: tuple[str, ...] = ("low", "medium", "high")

ATTEMPT_OUTCOMES: tuple[str, ...] = ("correct", "partial", "incorrect", "none")
"""One per student turn: the paper's attempt-outcome labels."""


@dataclass(frozen=True)
class CognitiveProfile:
    """Five traits on a 1-3 scale; their sum (5-15) sets the ability level.

    Ability levels split the 11 possible sums 4/3/4: low 5-8, medium 9-11, high 12-15.
    """

    activeness: int = 2
    perseverance: int = 2
    comprehension: int = 2
    expressiveness: int = 2
    attention: int = 2

    def __post_init__(self) -> None:
        for trait in TRAITS:
            value = getattr(self, trait)
            if value not in (1, 2, 3):
                raise InputError(f"CognitiveProfile.{trait}={value!r} must be 1, 2 or 3.")

    @property
    def total(self) -> int:
        return sum(getattr(self, trait) for trait in TRAITS)

    @property
    def ability(self) -> str:
        total = self.total
        return "low" if total <= 8 else "medium" if total <= 11 else "high"

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class StudentCondition:
    """Everything fixed about a student before the dialogue starts; shared by a whole group.

    Attributes:
        profile: the cognitive profile c.
        mastery: initial mastery m^0 per knowledge-unit id in [0, 1]; None means sampled from
            ``seed`` and the profile once the problem's units are known.
        seed: fixes everything sampled about the initial state (same seed, same m^0).
        misconception: an incorrect solution or belief the student starts with (MathDial's real
            incorrect student solutions), or None.
    """

    profile: CognitiveProfile = field(default_factory=CognitiveProfile)
    mastery: Mapping[str, float] | None = None
    seed: int = 0
    misconception: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.to_dict(),
            "mastery": None if self.mastery is None else dict(self.mastery),
            "seed": self.seed,
            "misconception": self.misconception,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudentCondition:
        unknown = set(data) - {"profile", "mastery", "seed", "misconception"}
        if unknown:
            raise InputError(f"Unknown StudentCondition field(s) {sorted(unknown)}.")
        return cls(
            profile=CognitiveProfile(**data.get("profile", {})),
            mastery=None if data.get("mastery") is None else dict(data["mastery"]),
            seed=int(data.get("seed", 0)),
            misconception=data.get("misconception"),
        )


@dataclass(frozen=True)
class StudentTurnState:
    """What the simulator assumed and did on one student turn (exposed to judge and evaluations).

    Attributes:
        turn: 0 for the opening message, then 1, 2, ... per reply.
        intent: the planned behaviour labels z^t of this turn.
        attempt: one of :data:`ATTEMPT_OUTCOMES`.
        mastery: m^t per knowledge unit after this turn's update.
        solved: the student has stated a correct final answer at some point.
        concluded: the student considers the session over.
        llm_calls: LLM calls this turn took (0 for offline backends).
        plan_source: where the behaviour labels came from: ``llm`` (the planner's reply), ``rules``
            (the rule planner: offline backend, ``planner=rules``, or a special turn such as leaving),
            ``fallback`` (the planner's replies kept failing parsing, so the rules stood in); None
            for the opening and for records written before it was recorded.
        reply_source: where the message came from: ``llm`` (the realiser's reply, as checked),
            ``refined`` (the refine call's reply, after the first failed the consistency check),
            ``template`` (the offline realiser), ``fallback`` (a template, after the LLM's replies
            failed parsing or the consistency check); None as for ``plan_source``.
    """

    turn: int
    intent: tuple[str, ...]
    attempt: str
    mastery: Mapping[str, float]
    solved: bool = False
    concluded: bool = False
    llm_calls: int = 0
    plan_source: str | None = None
    reply_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "intent": list(self.intent),
            "attempt": self.attempt,
            "mastery": dict(self.mastery),
            "solved": self.solved,
            "concluded": self.concluded,
            "llm_calls": self.llm_calls,
            "plan_source": self.plan_source,
            "reply_source": self.reply_source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudentTurnState:
        return cls(**{**data, "intent": tuple(data.get("intent", ())), "mastery": dict(data.get("mastery", {}))})


@dataclass(frozen=True)
class StudentTurn:
    """One student message and the state behind it."""

    text: str
    state: StudentTurnState


@runtime_checkable
class StudentSession(Protocol):
    """One simulated student in one dialogue."""

    @property
    def trace(self) -> Sequence[StudentTurnState]:
        """The state of every student turn so far, the opening included."""
        ...

    async def respond(self, tutor_message: str) -> StudentTurn:
        """The student's reply to the tutor's latest message.

        Raises:
            pearl_verl.llm.LLMCallError: when a backend call failed for good; the caller ends the
                episode as incomplete and flagged.
        """
        ...


@runtime_checkable
class StudentSimulator(Protocol):
    """Creates sessions; implemented by the PEARL simulator and the baseline simulators."""

    def opening(self, problem: Problem, condition: StudentCondition) -> str:
        """The student's first message presenting the problem (deterministic; the dataset prompt)."""
        ...

    async def start(self, problem: Problem, condition: StudentCondition, seed: int, opening: str) -> StudentSession:
        """A new session that has already said ``opening``; ``seed`` drives this member's randomness."""
        ...
