"""The cheap consistency check between a realised student message and its plan and state.

It runs on every message (no LLM call). Only a message that fails it is refined: by one LLM refine
call for the LLM backend (then re-checked), and, if that still fails or refining is off, replaced by
the template realisation of the same plan, which passes by construction. Checks:

- the message is non-empty, at most ``max_chars`` long, and stays in the student role (no
  ``Tutor:``/``Teacher:`` prefix, no end-of-session marker, no "as an AI");
- it states the correct final answer exactly when the plan is a correct final attempt;
- an incorrect attempt states its planned wrong value; a correct step attempt states the step result;
- a help-seeking or answer-seeking intent contains a question mark.
"""

from __future__ import annotations

import re

from pearl_verl.answers import numbers_in
from pearl_verl.problem import Problem
from pearl_verl.student.planner import Plan, to_number
from pearl_verl.student.reading import states_correct_answer
from pearl_verl.tutor.prompts import END_MARKER

_ROLE_BREAK = re.compile(r"^\s*(tutor|teacher|assistant)\s*:|\bas an ai\b|\blanguage model\b", re.I)
_STUDENT_PREFIX = re.compile(r"^\s*(student|me)\s*:\s*", re.I)


def clean_message(text: str) -> str:
    """Strip whitespace, wrapping quotes and a leading ``Student:`` label (formatting, not content)."""
    text = _STUDENT_PREFIX.sub("", text.strip())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def states_value(text: str, value: str) -> bool:
    """Whether some number in ``text`` equals ``value`` (numerically)."""
    target = to_number(value)
    if target is None:
        return value in text
    return any(v is not None and abs(v - target) < 1e-6 for v in (to_number(n) for n in numbers_in(text)))


def check_message(text: str, plan: Plan, problem: Problem, max_chars: int) -> list[str]:
    """Problems found with ``text`` as the realisation of ``plan``; empty when it is consistent."""
    issues = []
    if not text.strip():
        return ["the message is empty"]
    if len(text) > max_chars:
        issues.append(f"the message is {len(text)} characters long; keep it under {max_chars}")
    if END_MARKER in text or _ROLE_BREAK.search(text):
        issues.append("the message breaks the student role (speaks as tutor/assistant or mentions being an AI)")
    says_answer = states_correct_answer(problem, text)
    wants_answer = plan.attempt == "correct" and plan.final
    if wants_answer and not says_answer:
        issues.append(f"the student must state the final answer {problem.answer} as the last number")
    if says_answer and not wants_answer:
        issues.append("the student must not state the correct final answer in this turn")
    if plan.attempt == "incorrect" and plan.value is not None and not states_value(text, plan.value):
        issues.append(f"the student must commit to the wrong value {plan.value}")
    if plan.attempt == "correct" and not plan.final and plan.value is not None and not states_value(text, plan.value):
        issues.append(f"the student must state the step result {plan.value}")
    if {"help_seeking", "answer_seeking"} & set(plan.labels) and "?" not in text:
        issues.append("the student must ask the tutor a question")
    return issues
