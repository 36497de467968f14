"""A SocraticLM-style typed student: an LLM told to act as one of six student types.

After the student agent of SocraticLM (Liu et al., 2024), which simulates typed real-world student
behaviour in Socratic teaching dialogues. Our six types and their wording are our own
reconstruction, not SocraticLM's prompt. The type follows from the condition's seed, so a group
shares it.
"""

from __future__ import annotations

import random

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.llm.chat_types import ChatBackend
from pearl_verl.student.baselines.roleplay import RolePlaySession, backend_for, opening_message
from pearl_verl.student.student_config import StudentConfig

SOCRATICLM_TYPES: dict[str, str] = {
    "capable": "You understand most things quickly and answer the teacher's questions correctly, step by step.",
    "careless": "You understand the method but often make small calculation mistakes.",
    "misconceived": "You hold a wrong idea about a key concept of this problem and apply it confidently.",
    "confused": "You often do not understand the teacher's question and ask what it means.",
    "passive": "You give very short answers, rarely explain, and sometimes ask the teacher for the answer.",
    "distracted": "You lose focus easily and sometimes talk about unrelated things.",
}

SOCRATICLM_PROMPT = """You are a student being taught by a teacher, one question at a time, how to solve this problem:
{question}

Your student type: {kind}. {description}

Answer the teacher's latest message as this type of student would, in one to three sentences. Work \
things out yourself; do not jump ahead to the final answer unless you have worked your way there. \
Write only the student's message and never mention that you are an AI."""


def student_type(condition: StudentCondition) -> str:
    """The type for a condition (seeded, so every member of a group gets the same one)."""
    return random.Random(f"socraticlm|{condition.seed}").choice(sorted(SOCRATICLM_TYPES))


class SocraticLMStudentSimulator:
    """Creates SocraticLM-style typed sessions (LLM only).

    Args:
        config: the student settings (``simulator="socraticlm"``).
        backend: a chat backend; built from the config's endpoint when None.
    """

    def __init__(self, config: StudentConfig, backend: ChatBackend | None = None):
        self.config = config
        self.backend = backend_for(config, backend)

    def opening(self, problem: Problem, condition: StudentCondition) -> str:
        return opening_message(problem, condition, None)

    async def start(self, problem: Problem, condition: StudentCondition, seed: int, opening: str) -> RolePlaySession:
        kind = student_type(condition)
        prompt = SOCRATICLM_PROMPT.format(question=problem.question, kind=kind, description=SOCRATICLM_TYPES[kind])
        return RolePlaySession(self.backend, self.config, problem, prompt, opening, "none")
