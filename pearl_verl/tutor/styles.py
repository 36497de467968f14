"""Pools of scripted teachers with distinct styles, for a cold start that RL can select from.

The paper's cold start imitates one strong teacher. A model that can only imitate one style gives
RL nothing to choose between, and the 229K-parameter model of ``pearl-verl train-local`` cannot
copy problem-specific steps at all. So the local demo's cold start imitates a mixed pool: each
dialogue is held by one of these teachers, whose messages are short (at most 24 tokens of the
offline tokenizer, train-local's per-turn cap), problem-independent templates a tiny model can
learn. RL then has to discover, from the judge's rubric alone, which style earns reward. Like every
scripted tutor they are test doubles for a teacher model, never a baseline of the paper, and the
judge knows nothing about them.

- ``ScriptedCoachTutor``: Socratic; asks one question per turn, asks to re-check a wrong number,
  encourages when the student is stuck, recaps and ends the session once the answer is right.
- ``ScriptedLecturingTutor``: tells the method in a statement, never asks.
- ``ScriptedTerseTutor``: says as little as possible.
- ``ScriptedBlamingTutor``: points at mistakes with blaming words. Only in the ``mixed-blame``
  pool: the offline heuristic judge scores blame above silence with MathDial students (blame also
  sends the simulated student back to its work), so RL from a pool with blame can learn to blame;
  docs/training.md shows a run that did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.tutor.scripted import ScriptedSocraticTutor, student_stated_answer
from pearl_verl.tutor.tutor_prompts import END_MARKER

_STUCK = re.compile(r"\b(don'?t know|not sure|confus\w*|stuck|no idea|lost|help)\b", re.I)


def _last_student(turns: Sequence[DialogueTurn]) -> str:
    return next((t.text for t in reversed(turns) if t.role == STUDENT), "")


OPEN = "Let's work through this together. What is the problem asking you to find?"
RECAP = "Well done! Let's recap the key idea."
RECHECK = "Let's check that together. How did you get that number?"
REASSURE = "That's okay. What do you know so far?"
NEXT = "Good thinking! What is the next step, and why?"
LECTURE = "You add or multiply the numbers in order."
TERSE = "Continue."
BLAME = "No, that is wrong. Be careful."
TEACHER_LINES = (OPEN, RECAP, RECHECK, REASSURE, NEXT, LECTURE, TERSE, BLAME)
"""Every line the pool's teachers write (the tiny tokenizer learns each word as one token)."""


class ScriptedCoachTutor:
    """Socratic questions without problem-specific content (see the module docstring)."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        if not any(t.role == TUTOR for t in turns):
            return OPEN
        last = _last_student(turns)
        verdict = student_stated_answer(problem, last)
        if verdict:
            return f"{RECAP} {END_MARKER}"
        if verdict is False:
            return RECHECK
        if _STUCK.search(last):
            return REASSURE
        return NEXT


class ScriptedLecturingTutor:
    """States the method and never asks."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        return LECTURE


class ScriptedTerseTutor:
    """One word a turn."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        return TERSE


class ScriptedBlamingTutor:
    """Meets every turn with blame."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        return BLAME


TEACHER_POOLS: dict[str, tuple[type[TutorPolicy], ...]] = {
    "socratic": (ScriptedSocraticTutor,),
    "mixed": (ScriptedCoachTutor, ScriptedLecturingTutor, ScriptedTerseTutor),
    "mixed-blame": (ScriptedCoachTutor, ScriptedLecturingTutor, ScriptedTerseTutor, ScriptedBlamingTutor),
}
"""Cold-start teacher pools by name; dialogues are assigned to a pool's teachers in turn.
``mixed`` is train-local's default; ``mixed-blame`` adds the blaming teacher."""
