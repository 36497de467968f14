"""Tutors that answer from text alone: over a chat endpoint (teachers, evaluated tutors) or scripted."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from pearl_verl.dialogue.episode import DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.llm.chat_types import ChatBackend, SamplingConfig
from pearl_verl.tutor.tutor_prompts import tutor_messages

_cut_replies: ContextVar[list[int] | None] = ContextVar("tutor_cut_replies", default=None)


@contextlib.contextmanager
def counting_cut_replies() -> Iterator[list[int]]:
    """``[n]``: the served tutor replies the server cut at ``max_tokens`` within this block.

    One dialogue's task opens it around its episode; a tutor shared by concurrent dialogues then
    counts each dialogue's cut replies apart (a context variable follows the task, not the tutor).
    """
    counter = [0]
    token = _cut_replies.set(counter)
    try:
        yield counter
    finally:
        _cut_replies.reset(token)


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
        counter = _cut_replies.get()
        if counter is not None and result.finish_reasons[:1] == ("length",):  # the message is cut mid-way
            counter[0] += 1
        return result.text
