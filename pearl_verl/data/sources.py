"""Readers for the public problem sources, with errors that name the file, line and field.

GSM8K (``question``, ``answer`` ending in ``#### n``), MATH-500 (``problem``, ``solution``,
``answer``) and MathDial (GSM8K-style ``question``/``ground_truth`` plus a real
``student_incorrect_solution``, used as the student's misconception). Final answers are
normalised once here; everything downstream compares them with math-verify.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.answers import gsm8k_final_answer, gsm8k_rationale, last_boxed, numbers_in
from pearl_verl.problem import Problem

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceItem:
    """One problem read from a source, with the misconception the source attaches (MathDial)."""

    problem: Problem
    misconception: str | None = None


@dataclass(frozen=True)
class RowError:
    """A row that could not be read: where, which field, why."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: field '{self.field}': {self.message}"


class SourceError(ValueError):
    """Raised for a malformed row; ``error`` says where."""

    def __init__(self, error: RowError):
        super().__init__(str(error))
        self.error = error


def parse_json_line(line: str, path: str, line_no: int) -> dict[str, Any]:
    """One JSONL line as an object.

    Raises:
        SourceError: when the line is not a JSON object.
    """
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SourceError(RowError(path, line_no, "<line>", f"not valid JSON ({exc.msg})")) from None
    if not isinstance(row, dict):
        raise SourceError(RowError(path, line_no, "<line>", f"expected an object, got {type(row).__name__}"))
    return row


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-empty line; raises SourceError at the first malformed line."""
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                yield line_no, parse_json_line(line, str(path), line_no)


def _text(row: dict[str, Any], key: str, path: str, line: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SourceError(RowError(path, line, key, "missing or empty"))
    return value


def _gsm8k(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "question", path, line)
    answer_field = _text(row, "answer", path, line)
    try:
        answer = gsm8k_final_answer(answer_field)
    except ValueError as exc:
        raise SourceError(RowError(path, line, "answer", str(exc))) from None
    problem = Problem(f"{prefix}-{line:05d}", question, gsm8k_rationale(answer_field), answer, "gsm8k")
    return SourceItem(problem)


def _math(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "problem", path, line)
    solution = _text(row, "solution", path, line)
    answer = row.get("answer") if isinstance(row.get("answer"), str) and row["answer"].strip() else last_boxed(solution)
    if not answer:
        raise SourceError(RowError(path, line, "answer", "missing, and the solution has no \\boxed{} answer"))
    ident = row.get("unique_id") or f"{line:05d}"
    return SourceItem(Problem(f"{prefix}-{ident}", question, solution, answer.strip(), "math"))


def _mathdial(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "question", path, line)
    solution = _text(row, "ground_truth", path, line)
    # MathDial's ground truth is a GSM8K rationale whose last line is the bare final answer.
    *steps, final = solution.strip().splitlines()
    numbers = numbers_in(final)
    if not numbers:
        raise SourceError(RowError(path, line, "ground_truth", "its last line states no final number"))
    wrong = row.get("student_incorrect_solution")
    misconception = wrong.strip() if isinstance(wrong, str) and wrong.strip() else None
    ident = row.get("qid") or f"{line:05d}"
    problem = Problem(f"{prefix}-{ident}-{line:05d}", question, "\n".join(steps).strip(), numbers[-1], "mathdial")
    return SourceItem(problem, misconception)


READERS: dict[str, Callable[[dict[str, Any], str, int, str], SourceItem]] = {
    "gsm8k": _gsm8k,
    "math": _math,
    "mathdial": _mathdial,
}


def load_source(
    path: str | Path, kind: str, id_prefix: str | None = None, skip_errors: bool = False
) -> tuple[list[SourceItem], list[RowError]]:
    """Read a whole source file.

    Args:
        path: a JSONL file.
        kind: ``gsm8k``, ``math`` (MATH / MATH-500) or ``mathdial``.
        id_prefix: prefix of problem ids (default: ``<kind>-<file stem>``).
        skip_errors: collect malformed rows instead of raising on the first.

    Returns:
        (items, errors); errors is empty unless ``skip_errors``.

    Raises:
        ValueError: unknown kind; SourceError: a malformed row when not skipping.
    """
    if kind not in READERS:
        raise ValueError(f"Unknown source kind {kind!r}; expected one of {sorted(READERS)}.")
    prefix = id_prefix or f"{kind}-{Path(path).stem}"
    items: list[SourceItem] = []
    errors: list[RowError] = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                items.append(READERS[kind](parse_json_line(line, str(path), line_no), str(path), line_no, prefix))
            except SourceError as exc:
                if not skip_errors:
                    raise
                errors.append(exc.error)
    if errors:
        logger.warning("%s: skipped %d malformed row(s), first: %s", path, len(errors), errors[0])
    return items, errors
