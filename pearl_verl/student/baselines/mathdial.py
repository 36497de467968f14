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
import re

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.knowledge.decomposition import reference_steps, step_result
from pearl_verl.llm.chat_types import ChatBackend
from pearl_verl.student.baselines.roleplay import RolePlaySession, backend_for, opening_message
from pearl_verl.student.planner import format_number, to_number
from pearl_verl.student.reading import states_correct_answer
from pearl_verl.student.student_config import StudentConfig

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
    """The reference solution with its final result (and the answer) replaced by a wrong value.

    Every number of the last step equal to its result or to the answer is replaced, however it is
    written (``$70,000`` for ``70000``), so the believed solution never states the correct answer;
    when the last step still does (a percentage rounded in words), it is replaced by the wrong claim.
    """
    steps = reference_steps(problem)
    last = steps[-1]
    result = step_result(last) or problem.answer
    value = to_number(result)
    rng = random.Random(f"mathdial|{problem.problem_id}")
    targets = {v for v in (value, to_number(problem.answer)) if v is not None}
    offsets = [o for o in (-2, -1, 1, 2, 10) if value is not None and all(abs(value + o - t) > 1e-9 for t in targets)]
    wrong = format_number(value + rng.choice(offsets)) if offsets else "something else"

    def swap(match: re.Match[str]) -> str:
        number = to_number(match.group(0).replace(",", ""))
        return wrong if number is not None and any(abs(number - t) < 1e-9 for t in targets) else match.group(0)

    changed = _NUMBER.sub(swap, last)
    steps[-1] = changed if changed != last else f"{last} So the answer is {wrong}."
    if states_correct_answer(problem, "\n".join(steps)) or _NUMBER.sub(swap, steps[-1]) != steps[-1]:
        steps[-1] = f"So the answer is {wrong}."
    return "\n".join(steps)


_NUMBER = re.compile(r"(?<!\d)(?<!\d\.)\d[\d,]*(?:\.\d+)?(?!\d|\.\d)")


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
