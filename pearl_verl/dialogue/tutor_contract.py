"""The tutor's side of a dialogue: the policy a runner asks for the next message, and the end-of-session marker.

It sits in ``dialogue``, below :mod:`pearl_verl.tutor` (the instruction, the served and scripted tutors), because the
episode runner needs the contract and not the tutors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pearl_verl.dialogue.episode import DialogueTurn
from pearl_verl.dialogue.problem import Problem

END_MARKER = "[END_OF_SESSION]"


@runtime_checkable
class TutorPolicy(Protocol):
    """Writes the tutor's next message from the dialogue so far."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        """The next tutor message; may end with the end marker. Raises LLMCallError on failure."""
        ...


def split_end_marker(text: str) -> tuple[str, bool]:
    """The message before the end marker, and whether the marker was present."""
    index = text.find(END_MARKER)
    if index < 0:
        return text.strip(), False
    return text[:index].strip(), True
