"""The model-agnostic Socratic tutor instruction and the end-of-session marker.

The tutor sees the problem (and, by default, the reference solution, so that it can check the
student's steps) in its system message; the student's messages are ``user`` turns and its own are
``assistant`` turns. It ends a session by writing :data:`END_MARKER`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pearl_verl.dialogue.episode import TUTOR, DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.tutor_contract import END_MARKER
from pearl_verl.llm.chat_types import Message

TUTOR_INSTRUCTION = f"""You are a patient, encouraging Socratic math tutor talking with one student.
Your goal is that the student solves the problem themselves and understands why the method works.

How to tutor:
- Guide with questions and hints, one manageable step at a time; keep each message short and clear.
- Do not give the final answer, and do not carry out a key calculation for the student, while they
  can still get there themselves. Explain directly only after several genuine attempts, when the
  student is persistently stuck, or when they explicitly ask for an explanation.
- Check every step the student proposes against the mathematics. Point out mistakes by asking the
  student to re-examine the step, and treat mistakes as chances to learn.
- Adapt to the student: if they are stuck, try another angle or an easier sub-question; if they are
  confident and correct, move faster.
- Invite the student to explain and verify their reasoning, and at the end to reflect on the method.
- When the student has reached and checked the correct final answer, briefly summarise the key idea,
  then end the session by writing {END_MARKER} at the end of your message.
"""


def tutor_system_prompt(problem: Problem, include_reference: bool = True) -> str:
    """The tutor's system message for ``problem``."""
    parts = [TUTOR_INSTRUCTION, f"Problem:\n{problem.question}"]
    if include_reference:
        parts.append(
            "Reference solution (for you only; never show it to the student):\n"
            f"{problem.reference_solution}\nFinal answer: {problem.answer}"
        )
    return "\n\n".join(parts)


def tutor_messages(problem: Problem, turns: Sequence[DialogueTurn], include_reference: bool = True) -> list[Message]:
    """Chat messages from the tutor's point of view: system, then student=user, tutor=assistant."""
    messages: list[Message] = [{"role": "system", "content": tutor_system_prompt(problem, include_reference)}]
    messages += [{"role": "assistant" if t.role == TUTOR else "user", "content": t.text} for t in turns]
    return messages


def episode_messages(episode: EpisodeRecord, include_reference: bool = True) -> list[Message]:
    """A finished dialogue from the tutor's side, as a tutor model is trained on it (SFT, cold start).

    The system message and turns are exactly what the tutor saw (:func:`tutor_messages`); the end
    marker the tutor wrote is put back on its last turn, so a model learns to end sessions; a
    student message after the tutor's last turn is dropped (nothing to learn from it).
    """
    messages = tutor_messages(episode.problem, episode.turns, include_reference)
    while messages and messages[-1]["role"] == "user":
        messages.pop()
    if episode.end_reason == "tutor_ended" and messages and messages[-1]["role"] == "assistant":
        last = dict(messages[-1])
        last["content"] = f"{last['content']} {END_MARKER}".strip()
        messages[-1] = last
    return messages


