"""What a tutor message makes available to the student, and what a student message states.

Rule-based readers shared by both backends: whether a tutor message is language at all, which reference
step it addresses, which knowledge units it exposes (the availability that drives the mastery update),
whether it praises, flags an error or reveals the final answer; and which final answer, if any, a student
message states.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pearl_verl.dialogue.answers import answers_match, last_boxed, numbers_in
from pearl_verl.dialogue.legible import context_words, is_message
from pearl_verl.dialogue.problem import Problem
from pearl_verl.knowledge.curriculum import Curriculum
from pearl_verl.knowledge.decomposition import Decomposition

_PRAISE = re.compile(
    r"\b(yes|right|correct|exactly|well done|great|good (job|work|thinking|start)|nice work|perfect|excellent|"
    r"that's it)\b",
    re.I,
)
_FLAG = re.compile(
    r"\b(check|not quite|look again|re-?examine|mistake|try (that|it|again)|how did you get|are you sure|"
    r"incorrect|wrong|double-check|reconsider)\b",
    re.I,
)
_WORD = re.compile(r"[a-z]{3,}|\d+(?:\.\d+)?", re.I)
_STOP = frozenset(
    "the and for that this with you your are was were has have had how many much what each then from into per "
    "she he they them his her its our can will would there their which who whom all any one two".split()
)
ANSWER_IS = re.compile(r"answer\s+(?:is|would be|=|:)\s*(.+?)(?:[.!?]\s|[.!?]?$)", re.I | re.S)
STEP_MATCH_THRESHOLD = 0.5
"""Share of a step's content tokens a tutor message must contain to count as addressing that step."""


@dataclass(frozen=True)
class TutorMove:
    """The rule-based reading of one tutor message.

    Attributes:
        asks: the message asks something (contains ``?``).
        praises: it confirms or praises (and does not flag an error).
        flags_error: it questions or corrects the student's last contribution.
        step: index of the reference step it addresses, or None.
        reveals_answer: it states the final answer.
        units: knowledge units it makes available (their cues, or the units of the addressed step).
        legible: it is language; when False every other field is empty, so a planner can tell "nothing I
            understand" from "nothing in particular".
    """

    asks: bool = False
    praises: bool = False
    flags_error: bool = False
    step: int | None = None
    reveals_answer: bool = False
    units: frozenset[str] = frozenset()
    legible: bool = True


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in _WORD.findall(text) if t.lower() not in _STOP}


def addressed_steps(decomposition: Decomposition, message: str) -> list[int]:
    """Indices of the reference steps whose content tokens the message mostly contains, best first."""
    words = _tokens(message)
    scored = []
    for i, step in enumerate(decomposition.steps):
        content = _tokens(step.text)
        if content:
            share = len(content & words) / len(content)
            if share >= STEP_MATCH_THRESHOLD:
                scored.append((share, -i))
    return [-neg for _, neg in sorted(scored, reverse=True)]


def same_answer(gold: str, candidate: str) -> bool:
    """:func:`answers_match`, also trying both sides as inline LaTeX (``$...$``).

    math-verify parses bare numbers and LaTeX commands, but bare expressions with letters
    (``p - q``, ``x^2+7x+10``) only inside math delimiters.
    """
    if answers_match(gold, candidate):
        return True
    if "$" in gold or "$" in candidate:
        return False
    return answers_match(f"${gold}$", f"${candidate}$")


def reveals_answer(problem: Problem, message: str) -> bool:
    """Whether the message states the problem's final answer (a number equal to it, or its exact text)."""
    answer = problem.answer.strip()
    if len(answer) > 1 and not answer.isdigit() and answer in message:
        return True
    return any(same_answer(problem.answer, n) for n in numbers_in(message))


def read_tutor(
    message: str,
    problem: Problem,
    decomposition: Decomposition,
    curriculum: Curriculum,
    context: Iterable[str] = (),
) -> TutorMove:
    """Read a tutor message against the problem's decomposition.

    ``context``: texts whose words count as words when judging whether the message is language (what the
    student has written so far); so do the problem's question, its worked solution and its steps, which hold
    the names, units and notation (``frac``, ``sqrt``, ``pmatrix``) a tutor quotes from them. A message that is
    not language (letter soup around "Let's check that together?", a bare "?") or that stops where no sentence
    can end ("Well done! What do you") is read as no move at all: a student does not understand junk, and cue
    words inside it must not earn what a real hint earns. The CPU judges read the same turns as no tutoring.
    """
    own = [problem.question, problem.reference_solution, *(s.text for s in decomposition.steps), *context]
    if not is_message(message, context_words(own)):
        return TutorMove(legible=False)
    steps = addressed_steps(decomposition, message)
    step = steps[0] if steps else None
    units = {u for u in decomposition.units if curriculum.units[u].mentioned_in(message)}
    for index in steps:
        units.update(decomposition.steps[index].units)
    flags = bool(_FLAG.search(message))
    return TutorMove(
        asks="?" in message,
        praises=bool(_PRAISE.search(message)) and not flags,
        flags_error=flags,
        step=step,
        reveals_answer=reveals_answer(problem, message),
        units=frozenset(units),
    )


def stated_answer(text: str) -> str | None:
    """The final answer a student message commits to, or None.

    In order: the last ``\\boxed{}``; the text after "answer is"; the last number in the message.
    """
    boxed = last_boxed(text)
    if boxed:
        return boxed
    claims = list(ANSWER_IS.finditer(text))
    if claims:
        return claims[-1].group(1).strip().rstrip(".").strip()
    numbers = numbers_in(text)
    return numbers[-1] if numbers else None


def states_correct_answer(problem: Problem, text: str) -> bool:
    """Whether the message states the correct final answer (math-verify equivalence, never strings)."""
    candidate = stated_answer(text)
    if candidate is None:
        return False
    if same_answer(problem.answer, candidate):
        return True
    numbers = numbers_in(candidate)
    return bool(numbers) and candidate != numbers[-1] and same_answer(problem.answer, numbers[-1])
