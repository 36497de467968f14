"""The cheap consistency check between a realised student message and its plan and state.

It runs on every message (no LLM call). Only a message that fails it is refined: by one LLM refine
call for the LLM backend (then re-checked), and, if that still fails or refining is off, replaced by
the template realisation of the same plan, which passes by construction. Checks:

- the message is non-empty, at most ``max_chars`` long, and stays in the student role (no
  ``Tutor:``/``Teacher:`` prefix, no speaker label on a later line, no end-of-session marker, no
  "as an AI", no assistant talk such as "I'm here to assist you");
- it does not repeat its own instructions: no six words in a row from the realiser's or refiner's
  instructions, the behaviour definitions or this check's own findings, no label identifier
  (``help_seeking``), no prompt field name (``Intent:``, ``Problem:``), no line of the rendered
  profile and no talk of the planner's JSON format;
- a no-attempt turn states no answer ("the answer is 10", a boxed value) and works no calculation;
- it states the correct final answer exactly when the plan is a correct final attempt;
- an incorrect attempt states its planned wrong value; a correct step attempt states the step result;
- a help-seeking or answer-seeking intent contains a question mark.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pearl_verl.dialogue.answers import last_boxed, numbers_in
from pearl_verl.dialogue.problem import Problem
from pearl_verl.student.planner import Plan, to_number
from pearl_verl.student.reading import ANSWER_IS, states_correct_answer
from pearl_verl.student.taxonomy import ATTEMPT_DEFINITIONS, BEHAVIOUR_DEFINITIONS, BEHAVIOURS
from pearl_verl.tutor.prompts import END_MARKER

_ROLE_BREAK = re.compile(
    r"^\s*(tutor|teacher|assistant)\s*:|\bas an ai\b|\blanguage model\b|\b(here|happy) to (help|assist)\b"
    r"|\bhow (can|could|may) i (help|assist)\b|\bassist you\b|\bi(?:'m| am) an? (ai|assistant|chatbot)\b"
    # a speaker label after the first line: the model writes a script of the dialogue, not one message
    r"|\n\s*(student|tutor|teacher|assistant|me)\s*:"
    r"|\b(edited|revised|corrected|rewritten|improved) (version|message)\b",  # the refine task talked about
    re.I,
)
_PROMPT_FIELD = re.compile(
    r"^\s*(intent|behaviou?rs?|attempt|draft message|problems?|rules|plan|(student )?profile|your personality)\s*:"
    r"|\(\s*1\s*=\s*low|\b(activeness|perseverance|comprehension|expressiveness|attention) \([123]/3\)"
    r"|\bjson\b",  # the planner's reply format: a student talks about the problem, not about JSON
    re.I | re.M,
)  # the last lines: the profile block as the prompts render it; the planner's reply format
_WORKED = re.compile(r"\d\s*[-+*/×x÷]\s*\d+(?:\.\d+)?\s*=\s*\d")
_SHINGLE = 6
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
    issues = role_issues(text, max_chars)
    if issues and issues[0] == EMPTY:
        return issues
    if plan.attempt == "none" and (claims_answer(text) or _WORKED.search(text)):
        issues.append("the student makes no attempt in this turn: no calculation and no answer")
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


EMPTY = "the message is empty"
BREAKS_ROLE = (
    "the message breaks the student role "
    "(speaks as tutor/assistant, writes other speakers' lines or mentions being an AI)"
)


def role_issues(text: str, max_chars: int, finish_reason: str | None = None) -> list[str]:
    """The checks that hold for any simulated student's message, planned or not (the baselines too).

    A message cut at ``max_tokens`` (``finish_reason="length"``) is a fault, not a short reply: it
    can end mid-word, or in "(3" that a last-number reading takes for an answer.
    """
    if not text.strip():
        return [EMPTY]
    issues = []
    if finish_reason == "length":
        issues.append("the message was cut off at the token limit")
    if len(text) > max_chars:
        issues.append(f"the message is {len(text)} characters long; keep it under {max_chars}")
    if END_MARKER in text or _ROLE_BREAK.search(text):
        issues.append(BREAKS_ROLE)
    if repeats_instructions(text):
        issues.append("the message repeats its instructions instead of speaking as the student")
    return issues


def claims_answer(text: str) -> bool:
    """Whether the message commits to a final answer in words ("the answer is 10") or a box."""
    return bool(last_boxed(text)) or bool(ANSWER_IS.search(text))


def repeats_instructions(text: str) -> bool:
    """Whether ``text`` quotes the student prompts or this check (six words in a row), a label or a field name."""
    if _PROMPT_FIELD.search(text) or any(label in text for label in BEHAVIOURS if "_" in label):
        return True
    words = _words(text)
    return any(tuple(words[i : i + _SHINGLE]) in _instruction_shingles() for i in range(len(words) - _SHINGLE + 1))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


@lru_cache(maxsize=1)
def _instruction_shingles() -> frozenset[tuple[str, ...]]:
    from pearl_verl.student import prompts

    texts = [
        re.sub(r"\{[a-z_]+\}", " ", prompts.REALISER_INSTRUCTION),  # the template, without its slots
        prompts.REFINE_INSTRUCTION,
        prompts.PLANNER_INSTRUCTION,
        *BEHAVIOUR_DEFINITIONS.values(),
        *ATTEMPT_DEFINITIONS.values(),
        *_OWN_FINDINGS,
    ]
    shingles = set()
    for text in texts:
        words = _words(text)
        shingles.update(tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))
    return frozenset(shingles)


_OWN_FINDINGS = (
    "the student must state the final answer as the last number",
    "the student must not state the correct final answer in this turn",
    "the student must commit to the wrong value",
    "the student must state the step result",
    "the student must ask the tutor a question",
    "the student makes no attempt in this turn: no calculation and no answer",
    BREAKS_ROLE,
)
