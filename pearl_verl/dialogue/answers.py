"""Final answers: extraction from datasets and messages, and equivalence through math-verify.

Answers are never compared as strings: ``18``, ``18.0``, ``$18`` and ``\\frac{36}{2}`` are the same
answer. math-verify's own timeout uses ``signal.alarm``, which only works in the main thread, so
calls from worker threads (verl's agent-loop and reward workers) run without it.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from math_verify import parse, verify

from pearl_verl.errors import InputError

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?(?![\w])")
_GSM8K_FINAL = re.compile(r"####\s*(.+?)\s*$", re.S)
_EXPRESSION_CHARS = 80  # longer texts are prose, never read as one expression


def _timeouts() -> dict[str, int | None]:
    main = threading.current_thread() is threading.main_thread()
    return {"parsing_timeout": 5 if main else None}


@lru_cache(maxsize=65536)
def _parsed(text: str, as_math: bool) -> tuple:
    """math-verify's parse; ``as_math`` reads the text as one LaTeX expression (``$text$``)."""
    return tuple(parse(f"${text}$" if as_math else text, **_timeouts()))


def _readings(text: str, expression_first: bool) -> list[tuple]:
    """The parses worth trying. Bare LaTeX and algebra ("p - q", "(3, \\frac{\\pi}{2})") parse
    only as ``$...$``; prose ("the answer is 18") parses only as it is."""
    plain = _parsed(text, False)
    if "$" in text or len(text) > _EXPRESSION_CHARS:
        return [plain]
    wrapped = _parsed(text, True)
    return [wrapped, plain] if expression_first else [plain, wrapped]


def answers_match(gold: str, candidate: str) -> bool:
    """Whether ``candidate`` expresses the same final answer as ``gold`` (symbolic equality).

    ``gold`` is a normalised final answer (read as an expression first); ``candidate`` may be an
    answer or a short message (read as it is first).
    """
    main = threading.current_thread() is threading.main_thread()
    golds = [g for g in _readings(gold, expression_first=True) if g][:1]
    candidates = [c for c in _readings(candidate, expression_first=False) if c]
    return any(
        verify(list(g), list(c), timeout_seconds=5 if main else None) for g in golds for c in candidates
    )


def numbers_in(text: str) -> list[str]:
    """Every number in ``text`` (integers, decimals, simple fractions; thousands commas removed)."""
    return [m.group(0).replace(",", "").replace(" ", "") for m in _NUMBER.finditer(text)]


def mentions_answer(text: str, gold: str) -> bool:
    """Whether any number in ``text`` equals the final answer ``gold`` (e.g. to detect leakage)."""
    return any(answers_match(gold, number) for number in numbers_in(text))


def gsm8k_final_answer(answer_field: str) -> str:
    """The final answer after GSM8K's ``####`` marker, thousands commas removed.

    Raises:
        InputError: when the field has no ``####`` line.
    """
    match = _GSM8K_FINAL.search(answer_field)
    if not match:
        raise InputError("GSM8K answer has no '#### <final answer>' line")
    return match.group(1).replace(",", "").strip()


def gsm8k_rationale(answer_field: str) -> str:
    """The worked solution before GSM8K's ``####`` line, with its ``<<calc>>`` annotations removed."""
    rationale = answer_field.split("####")[0]
    return re.sub(r"<<[^>]*>>", "", rationale).strip()


def last_boxed(solution: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in a solution, braces balanced."""
    start = max(solution.rfind("\\boxed"), solution.rfind("\\fbox"))
    if start < 0:
        return None
    open_brace = solution.find("{", start)
    if open_brace < 0:
        return None
    depth = 0
    for i in range(open_brace, len(solution)):
        if solution[i] == "{":
            depth += 1
        elif solution[i] == "}":
            depth -= 1
            if depth == 0:
                return solution[open_brace + 1 : i].strip()
    return None
