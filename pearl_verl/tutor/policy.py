"""Tutors that answer from text alone: over a chat endpoint (teachers, evaluated tutors) or scripted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pearl_verl.dialogue.episode import DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.llm.types import ChatBackend, SamplingConfig
from pearl_verl.tutor.prompts import tutor_messages


@runtime_checkable
class TutorPolicy(Protocol):
    """Writes the tutor's next message from the dialogue so far."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        """The next tutor message; may end with the end marker. Raises LLMCallError on failure."""
        ...


class ChatTutor:
    """A tutor served by any OpenAI-compatible endpoint, prompted with the Socratic instruction.

    Args:
        backend: the chat backend (``OpenAIChatClient`` in real runs).
        sampling: tutor sampling (paper, evaluation: temperature 1.0, top_p 1.0, top_k 50).
        include_reference: show the reference solution to the tutor (default on).
    """

    def __init__(self, backend: ChatBackend, sampling: SamplingConfig | None = None, include_reference: bool = True):
        self.backend = backend
        self.sampling = sampling
        self.include_reference = include_reference

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        result = await self.backend.chat(tutor_messages(problem, turns, self.include_reference), self.sampling)
        return result.text
