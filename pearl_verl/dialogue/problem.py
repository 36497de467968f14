"""A math problem as every part of pearl_verl sees it: question, reference solution, final answer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pearl_verl.errors import InputError

MAX_TEXT_CHARS = 20_000
"""Longest question or reference solution accepted: MATH's longest solutions have a few thousand
characters; a longer field is a wrong column or a corrupt file, and would make every prompt that
quotes it (student, tutor, judge) slow and expensive."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Problem:
    """One problem.

    Attributes:
        problem_id: stable id, e.g. ``gsm8k-test-0042``; keys caches and groups.
        question: the problem statement.
        reference_solution: a worked solution (GSM8K's rationale, MATH's solution).
        answer: the final answer, normalised once at data preparation (GSM8K ``####``, MATH
            ``\\boxed{}``); compare answers with math-verify, never as strings.
        source: the dataset (verl's ``data_source``), e.g. ``gsm8k``.
    """

    problem_id: str
    question: str
    reference_solution: str
    answer: str
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("problem_id", "answer"):  # JSON files often hold these as numbers: 42, 7.5
            value = getattr(self, name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                object.__setattr__(self, name, str(value))
        for name in ("problem_id", "question", "reference_solution", "answer", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise InputError(f"Problem.{name} = {_shown(value)} is {type(value).__name__}, not text.")
        for name in ("problem_id", "question", "answer"):
            if not getattr(self, name).strip():
                raise InputError(f"Problem.{name} is empty (problem_id={self.problem_id!r}).")
        for name in ("question", "reference_solution"):
            if len(getattr(self, name)) > MAX_TEXT_CHARS:
                raise InputError(
                    f"Problem.{name} has {len(getattr(self, name)):,} characters, over the {MAX_TEXT_CHARS:,} "
                    f"a problem may have (problem_id={self.problem_id[:60]!r}): is this field the right one?"
                )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Problem:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        unknown = set(data) - {"problem_id", "question", "reference_solution", "answer", "source"}
        if unknown:
            raise InputError(f"Unknown Problem field(s) {sorted(unknown)}.")
        return cls(**data)


def solution_steps(reference_solution: str) -> list[str]:
    """The reference solution split into steps (lines, else sentences)."""
    lines = [line.strip() for line in reference_solution.splitlines() if line.strip()]
    if len(lines) > 1:
        return lines
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", reference_solution) if s.strip()]


@dataclass(frozen=True)
class SimulationItem:
    """One problem to simulate, with the misconception its source provides (MathDial), if any."""

    problem: Problem
    misconception: str | None = None
