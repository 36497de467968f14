"""One tutoring dialogue as every consumer sees it: agent loop, judge, SFT generator, evaluations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition, StudentTurnState
from pearl_verl.errors import InputError

STUDENT, TUTOR = "student", "tutor"

END_REASONS: tuple[str, ...] = (
    "tutor_ended",  # the tutor wrote the end-of-session marker
    "student_concluded",  # the student solved the problem and concluded
    "student_left",  # the student ended the session without solving (gave up, disengaged)
    "turn_limit",  # the tutor-turn limit was reached
    "token_budget",  # the response-token budget was spent
    "student_error",  # the student backend failed for good
    "tutor_error",  # the tutor backend failed for good
)
NORMAL_END_REASONS: frozenset[str] = frozenset({"tutor_ended", "student_concluded"})


@dataclass(frozen=True)
class DialogueTurn:
    """One message; ``role`` is ``student`` or ``tutor``."""

    role: str
    text: str

    def __post_init__(self) -> None:
        if self.role not in (STUDENT, TUTOR):
            raise InputError(f"DialogueTurn.role={self.role!r} must be {STUDENT!r} or {TUTOR!r}.")


@dataclass(frozen=True)
class EpisodeRecord:
    """A finished (or cut-off) tutoring dialogue.

    Attributes:
        problem: what was tutored.
        condition: the student's initial condition (shared by its group).
        turns: the dialogue, starting with the student's opening message.
        student_trace: one state per student turn, aligned with the student turns in ``turns``.
        end_reason: one of :data:`END_REASONS`.
    """

    problem: Problem
    condition: StudentCondition
    turns: tuple[DialogueTurn, ...]
    student_trace: tuple[StudentTurnState, ...]
    end_reason: str

    def __post_init__(self) -> None:
        if self.end_reason not in END_REASONS:
            raise InputError(f"end_reason={self.end_reason!r} is not one of {list(END_REASONS)}.")

    @property
    def tutor_turns(self) -> int:
        """N_i in the turn penalty: the number of tutor messages."""
        return sum(turn.role == TUTOR for turn in self.turns)

    @property
    def ended_normally(self) -> bool:
        """Whether the dialogue ended normally rather than being cut off or failing.

        Not the reward field ``completed`` (:data:`pearl_verl.dims.COMPLETED_KEY`), which also needs the
        judge's completion gate to open.
        """
        return self.end_reason in NORMAL_END_REASONS

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem.to_dict(),
            "condition": self.condition.to_dict(),
            "turns": [{"role": t.role, "text": t.text} for t in self.turns],
            "student_trace": [s.to_dict() for s in self.student_trace],
            "end_reason": self.end_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        return cls(
            problem=Problem.from_dict(data["problem"]),
            condition=StudentCondition.from_dict(data["condition"]),
            turns=tuple(DialogueTurn(**t) for t in data["turns"]),
            student_trace=tuple(StudentTurnState.from_dict(s) for s in data.get("student_trace", ())),
            end_reason=data["end_reason"],
        )
