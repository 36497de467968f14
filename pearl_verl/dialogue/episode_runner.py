"""The tutoring episode, as one state machine shared by the agent loop, SFT generation and evaluation.

Turn-taking and stopping rules live here once: the tutor speaks (its end-of-session marker ends the
episode), the student answers (concluding ends it), the tutor-turn limit cuts it off, a spent token
budget cuts it off, and a backend that failed for good ends it as incomplete and flagged. Callers
plug in how a tutor turn is produced (verl's server manager with token bookkeeping in the agent loop,
a chat endpoint in SFT generation and evaluation) and may observe each student turn (the agent loop
appends its tokens there and reports when the budget is spent).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum, auto

from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition, StudentSession, StudentTurn
from pearl_verl.dialogue.tutor_contract import TutorPolicy, split_end_marker
from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import LLMCallError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TutorReply:
    """One tutor turn as produced by the caller.

    Attributes:
        text: the tutor's message, possibly containing the end marker.
        budget_exhausted: generation stopped because the response-token budget ran out.
    """

    text: str
    budget_exhausted: bool = False


TutorStep = Callable[[Sequence[DialogueTurn]], Awaitable[TutorReply]]
"""Produces the next tutor turn from the dialogue so far."""

StudentObserver = Callable[[StudentTurn], Awaitable[bool]]
"""Sees each student turn after it is added; returns True when the token budget is now spent."""


@dataclass(frozen=True)
class EpisodeLimits:
    """Stopping limits.

    Attributes:
        max_tutor_turns: tutor turns before the episode is cut off (paper: 15 in training, 20 in
            evaluation).
    """

    max_tutor_turns: int = 15

    def __post_init__(self) -> None:
        if self.max_tutor_turns < 1:
            raise InputError(f"max_tutor_turns={self.max_tutor_turns} must be >= 1.")


class Phase(Enum):
    TUTOR = auto()
    STUDENT = auto()
    DONE = auto()


async def run_episode(
    problem: Problem,
    condition: StudentCondition,
    session: StudentSession,
    opening: str,
    tutor_step: TutorStep,
    limits: EpisodeLimits = EpisodeLimits(),
    observe_student: StudentObserver | None = None,
) -> EpisodeRecord:
    """Run one dialogue to its end and return its record.

    Args:
        problem: the problem being tutored.
        condition: the student's initial condition (recorded for the judge).
        session: the simulated student, which has already said ``opening``.
        opening: the student's first message (the dataset prompt).
        tutor_step: produces each tutor turn.
        limits: stopping limits.
        observe_student: called after each student turn; returning True ends the episode with
            ``token_budget``.

    Returns:
        The episode; ``end_reason`` says why it stopped. Backend failures (``LLMCallError``) end
        it as ``tutor_error`` / ``student_error`` instead of raising.
    """
    turns: list[DialogueTurn] = [DialogueTurn(STUDENT, opening)]
    phase, end_reason, tutor_turns = Phase.TUTOR, "", 0
    while phase is not Phase.DONE:
        if phase is Phase.TUTOR:
            try:
                reply = await tutor_step(tuple(turns))
            except LLMCallError as exc:
                logger.warning("tutor call failed for %s: %s", problem.problem_id, exc)
                phase, end_reason = Phase.DONE, "tutor_error"
                continue
            text, ended = split_end_marker(reply.text)
            turns.append(DialogueTurn(TUTOR, text))
            tutor_turns += 1
            if reply.budget_exhausted:
                phase, end_reason = Phase.DONE, "token_budget"
            elif ended:
                phase, end_reason = Phase.DONE, "tutor_ended"
            else:
                phase = Phase.STUDENT
        else:
            try:
                student_turn = await session.respond(turns[-1].text)
            except LLMCallError as exc:
                logger.warning("student call failed for %s: %s", problem.problem_id, exc)
                phase, end_reason = Phase.DONE, "student_error"
                continue
            turns.append(DialogueTurn(STUDENT, student_turn.text))
            phase, end_reason = _after_student(student_turn, tutor_turns, limits)
            if observe_student is not None and await observe_student(student_turn):
                phase, end_reason = Phase.DONE, "token_budget"
    return EpisodeRecord(problem, condition, tuple(turns), tuple(session.trace), end_reason)


def _after_student(turn: StudentTurn, tutor_turns: int, limits: EpisodeLimits) -> tuple[Phase, str]:
    if turn.state.concluded:
        return Phase.DONE, "student_concluded" if turn.state.solved else "student_left"
    if tutor_turns >= limits.max_tutor_turns:
        return Phase.DONE, "turn_limit"
    return Phase.TUTOR, ""


def policy_step(policy: TutorPolicy, problem: Problem) -> TutorStep:
    """A :data:`TutorStep` that asks a text-level tutor policy for each turn."""

    async def step(turns: Sequence[DialogueTurn]) -> TutorReply:
        return TutorReply(await policy.reply(problem, turns))

    return step
