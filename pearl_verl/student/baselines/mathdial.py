"""A MathDial-style student: an LLM that believes a given wrong solution and yields only to good questions.

After the MathDial set-up (Macina et al., 2023): the student presents an incorrect solution it is
confident about, defends it against generic prompting and telling, and revises it only when the
tutor's questions lead it to notice the error itself. The wrong solution is the condition's
``misconception`` (MathDial's real incorrect solutions); without one it is the reference solution
with its final result replaced by a plausible wrong value (:func:`perturbed_solution`). The prompt is
our own wording, not MathDial's.
"""

from __future__ import annotations

import random

from pearl_verl.knowledge.decomposition import reference_steps, step_result
from pearl_verl.llm.types import ChatBackend
from pearl_verl.problem import Problem
from pearl_verl.student.baselines.roleplay import RolePlaySession, backend_for, opening_message
from pearl_verl.student.config import StudentConfig
from pearl_verl.student.planner import format_number, to_number
from pearl_verl.student.types import StudentCondition

MATHDIAL_PROMPT = """You are a middle-school student talking with a math teacher about this problem:
{question}

This is your solution, and you are confident it is correct:
{solution}

How to act:
- Stay in character as the student; write only your next message, one to three sentences.
- Defend your solution and explain your reasoning when the teacher asks general questions or simply \
tells you that you are wrong.
- Change your mind only when the teacher's questions make you notice the specific mistake yourself; \
then correct that step and continue from there.
- Never mention that you are an AI or that you were given a solution."""


def perturbed_solution(problem: Problem) -> str:
    """The reference solution with its final result (and the answer) replaced by a wrong value."""
    steps = reference_steps(problem)
    last = steps[-1]
    result = step_result(last) or problem.answer
    value = to_number(result)
    rng = random.Random(f"mathdial|{problem.problem_id}")
    wrong = format_number(value + rng.choice((-2, -1, 1, 2, 10))) if value is not None else "something else"
    steps[-1] = last.replace(result, wrong) if result in last else f"{last} So the answer is {wrong}."
    return "\n".join(steps)


class MathDialStudentSimulator:
    """Creates MathDial-style sessions (LLM only).

    Args:
        config: the student settings (``simulator="mathdial"``).
        backend: a chat backend; built from the config's endpoint when None.
    """

    def __init__(self, config: StudentConfig, backend: ChatBackend | None = None):
        self.config = config
        self.backend = backend_for(config, backend)

    def solution(self, problem: Problem, condition: StudentCondition) -> str:
        """The wrong solution the student believes."""
        return condition.misconception or perturbed_solution(problem)

    def opening(self, problem: Problem, condition: StudentCondition) -> str:
        return opening_message(problem, condition, self.solution(problem, condition))

    async def start(self, problem: Problem, condition: StudentCondition, seed: int, opening: str) -> RolePlaySession:
        prompt = MATHDIAL_PROMPT.format(question=problem.question, solution=self.solution(problem, condition))
        return RolePlaySession(self.backend, self.config, problem, prompt, opening, "incorrect")
