"""What the fitted judge reads of one candidate tutor turn: its text, the student's last turn, and counts.

The model (:mod:`pearl_verl.judge.fitted.model`) sees a candidate through :func:`turn_fields`: two texts for
its n-gram vectorizers (the candidate; the student's last turn, the "history's end") and the counts of
:data:`COUNTS`, each a property of the candidate against its conversation that n-grams cannot see: whether
it quotes the student's numbers (locating a mistake), says numbers nobody said (incoherent or revealing),
carries the reference answer, repeats the student's words. Every count is computed here, in pure Python,
the same way at fitting and at judging time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pearl_verl.dialogue.answers import answers_match, numbers_in
from pearl_verl.dialogue.episode import STUDENT
from pearl_verl.judge.judge_contract import NOT_GIVEN

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FLAGS = re.compile(r"\b(not|isn't|wasn't|mistake|error|incorrect|wrong|actually|however|but|oops|almost|close)\b",
                    re.I)
_PRAISE = re.compile(r"\b(great|good|excellent|well done|perfect|correct|right|nice|awesome|fantastic)\b", re.I)
_OPERATOR = re.compile(r"[=+*/×÷]|(?<=\d)\s*-\s*(?=\d)")
_ROLE_PLAY = re.compile(r"###|\b(User|Tutor|Student|Assistant)\s*:", re.I)
_STOP = frozenset(
    "a an the and or but so to of in on at for with by is are was were be been it its this that these those i you "
    "your we our they them he she his her my me do does did can could would should will what how why which who "
    "there their then than if as not no yes".split()
)

COUNTS: tuple[str, ...] = (
    "log_words", "questions", "ends_with_question", "numbers", "numbers_from_student", "new_numbers",
    "student_word_overlap", "flags_an_error", "praises", "praises_first", "exclamations", "operators",
    "role_play", "sentences", "history_word_share", "solution_word_share", "solution_numbers",
    "states_reference_answer",
)
"""The counts of a candidate, in the order the model's weights expect them (:func:`turn_fields`)."""


@dataclass(frozen=True)
class TurnContext:
    """One candidate next tutor turn and what it answers.

    Attributes:
        history: ``(role, text)`` turns before the candidate, role ``"tutor"`` or ``"student"``.
        candidate: the tutor turn judged.
        solution: the reference solution; empty when not given.
        answer: the reference final answer; :data:`~pearl_verl.judge.judge_contract.NOT_GIVEN` when not given.
    """

    history: Sequence[tuple[str, str]]
    candidate: str
    solution: str = ""
    answer: str = NOT_GIVEN

    @property
    def last_student(self) -> str:
        """The student's last turn before the candidate ("" when the student has not spoken)."""
        return next((text for role, text in reversed(self.history) if role == STUDENT), "")


def _content(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def _share(words: set[str], source: set[str]) -> float:
    return len(words & source) / len(words) if words else 0.0


def turn_fields(context: TurnContext) -> tuple[str, str, list[float]]:
    """The candidate's text, the student's last turn, and the values of :data:`COUNTS` in order."""
    text, last = context.candidate, context.last_student
    history = " ".join(t for _, t in context.history)
    numbers, from_student = numbers_in(text), set(numbers_in(last))
    said = set(numbers_in(history))
    solution_numbers = set(numbers_in(context.solution))
    words = _content(text)
    answer = context.answer if context.answer != NOT_GIVEN else None
    first_sentence = _SENTENCE.split(text.strip(), maxsplit=1)[0] if text.strip() else ""
    values = {
        "log_words": math.log1p(len(text.split())),
        "questions": text.count("?"),
        "ends_with_question": text.rstrip().endswith("?"),
        "numbers": len(numbers),
        "numbers_from_student": sum(n in from_student for n in numbers),
        "new_numbers": sum(n not in said for n in numbers),
        "student_word_overlap": _share(words, _content(last)),
        "flags_an_error": bool(_FLAGS.search(text)),
        "praises": bool(_PRAISE.search(text)),
        "praises_first": bool(_PRAISE.search(first_sentence)),
        "exclamations": text.count("!"),
        "operators": len(_OPERATOR.findall(text)),
        "role_play": bool(_ROLE_PLAY.search(text)),
        "sentences": len([s for s in _SENTENCE.split(text) if s.strip()]),
        "history_word_share": _share(words, _content(history)),
        "solution_word_share": _share(words, _content(context.solution)),
        "solution_numbers": sum(n in solution_numbers and n not in from_student for n in numbers),
        "states_reference_answer": answer is not None and any(answers_match(answer, n) for n in numbers),
    }
    return text, last, [float(values[name]) for name in COUNTS]
