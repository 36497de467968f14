"""Scripted tutors: deterministic test doubles for a tutor model (no network, no learning).

They let the simulator, the judge, the SFT pipeline and the evaluations be exercised offline with
tutors of known style. ``ScriptedSocraticTutor`` walks the student through the reference solution
with questions and hides every computed result; ``ScriptedLeakingTutor`` states the answer and the
whole solution at once. They are not baselines of the paper and never stand in for a real tutor in
a recipe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pearl_verl.dialogue.answers import answers_match, numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem, solution_steps
from pearl_verl.tutor.tutor_prompts import END_MARKER

_RESULT_AFTER_EQUALS = re.compile(r"=\s*\$?-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")
_CONFUSED = re.compile(r"\b(don'?t know|not sure|confus|stuck|no idea|lost|help|\?)", re.I)


def hide_results(step: str) -> str:
    """A solution step with each computed result (what follows ``=``) replaced by ``= ?``."""
    return _RESULT_AFTER_EQUALS.sub("= ?", step)


def student_stated_answer(problem: Problem, message: str) -> bool | None:
    """True/False when the message's last number is/isn't the answer; None when it has no number."""
    numbers = numbers_in(message)
    if not numbers:
        return None
    return answers_match(problem.answer, numbers[-1])


class ScriptedSocraticTutor:
    """Asks about one reference-solution step per turn with its results hidden; praises, checks
    wrong numbers, and ends the session once the student states the correct final answer."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        steps = solution_steps(problem.reference_solution) or [problem.question]
        asked = sum(t.role == TUTOR for t in turns)
        last = next((t.text for t in reversed(turns) if t.role == STUDENT), "")
        verdict = student_stated_answer(problem, last) if asked else None
        if verdict:
            return (
                "Yes, that's right, well done! Let's recap the key idea: we broke the problem into steps "
                f"and checked each one. Can you see how each step led to the answer? {END_MARKER}"
            )
        if verdict is False:
            return (
                f"Let's check that together. How did you get {numbers_in(last)[-1]}? "
                "Look again at what the problem gives you and try that step once more."
            )
        if asked == 0:
            return "Let's work through this together. What is the problem asking you to find, and what do you know so far?"
        if _CONFUSED.search(last):
            opener = "That's okay, this part is tricky. "
        else:
            opener = "Good thinking. "
        step = hide_results(steps[min(asked - 1, len(steps) - 1)])
        if asked - 1 >= len(steps) - 1:
            return opener + f"Now put it all together: {step} What final answer do you get?"
        return opener + f"Consider this step: {step} Can you work that part out?"


class ScriptedLeakingTutor:
    """Gives the final answer and the whole reference solution in its first message."""

    async def reply(self, problem: Problem, turns: Sequence[DialogueTurn]) -> str:
        if not any(t.role == TUTOR for t in turns):
            return f"The answer is {problem.answer}. Here is the full solution: {problem.reference_solution}"
        return f"As I said, the answer is {problem.answer}. {END_MARKER}"
