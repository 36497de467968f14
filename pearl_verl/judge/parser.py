"""Strict parsing of the judge's output against the rubric.

The output must be one JSON object with exactly the 8 dimension keys, each holding exactly its
criteria, each ``{"score": <int on the criterion's scale>, "rationale": <non-empty string>}``.
Anything else fails with a :class:`JudgeOutputError` naming what is wrong; the judge then retries
or flags the sample. No keyword guessing and no repair: a partially valid judgement is a failure,
because a score the judge did not give must never enter training.

A rationale that is the prompt skeleton's placeholder (``<one or two sentences>``, a score scale)
copied back is rejected: weak judges echo the skeleton, integer scores and all. So is a judgement
whose rationales name nothing in the dialogue (numbers, scale words, the criterion's own key, one
word repeated, one rationale for most criteria: :mod:`pearl_verl.judge.sanity`).

Two wrappers are tolerated because served models add them regardless of instructions and they
carry no score: a leading ``<think>...</think>`` block (Qwen3 reasoning mode) and one code fence
around the whole object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.judge_contract import CriterionScore
from pearl_verl.judge.prompt import placeholder_form, skeleton_placeholders
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.sanity import judgement_issue

MAX_RATIONALE_CHARS = 2000

PARSE_FAILURES: tuple[str, ...] = (
    "truncated",  # the completion hit max_tokens, or a reasoning block never closed
    "invalid_json",  # not exactly one JSON object (prose around it, syntax error, NaN, duplicate keys)
    "missing",  # a dimension or criterion is absent
    "unexpected_key",  # a key that is not in the rubric
    "bad_score",  # a score that is not an integer on the criterion's scale
    "bad_rationale",  # not a non-empty string of bounded length, or the prompt's placeholder copied back
    "junk_rationale",  # rationales that name nothing in the dialogue (pearl_verl.judge.sanity)
)

_THINK = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*?)\n?```\Z", re.DOTALL)


class JudgeOutputError(ValueError):
    """The judge's output does not satisfy the contract.

    Attributes:
        reason: one of :data:`PARSE_FAILURES`.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        assert reason in PARSE_FAILURES, reason
        self.reason = reason


def parse_judgement(text: str, rubric: Rubric = RUBRIC, finish_reason: str | None = None) -> tuple[CriterionScore, ...]:
    """Parse one judge completion into criterion scores (ungated), in rubric order.

    Args:
        text: the completion text.
        rubric: the rubric the judge was prompted with.
        finish_reason: the server's finish reason; ``"length"`` means the output was cut off.

    Raises:
        JudgeOutputError: when the output breaks the contract in any way.
    """
    if finish_reason == "length":
        raise JudgeOutputError("the judge output was cut off at max_tokens", "truncated")
    body = _unwrap(text)
    try:
        data = json.loads(body, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except (json.JSONDecodeError, _DuplicateKey, _NonFinite) as exc:
        raise JudgeOutputError(f"not one valid JSON object: {exc}", "invalid_json") from None
    if not isinstance(data, dict):
        raise JudgeOutputError(f"top level is a {type(data).__name__}, not an object", "invalid_json")
    _check_keys(data, DIMENSIONS, "the output")
    placeholders = skeleton_placeholders(rubric)
    scores: list[CriterionScore] = []
    for dimension in DIMENSIONS:
        block = data[dimension]
        criteria = rubric.for_dimension(dimension)
        if not isinstance(block, dict):
            raise JudgeOutputError(f"'{dimension}' is a {type(block).__name__}, not an object", "missing")
        _check_keys(block, [c.key for c in criteria], f"'{dimension}'")
        for criterion in criteria:
            raw, rationale = _entry(block[criterion.key], criterion.id, criterion.scores, placeholders)
            scores.append(CriterionScore(dimension, criterion.key, raw, criterion.normalise(raw), rationale))
    junk = judgement_issue(scores, rubric)
    if junk:
        raise JudgeOutputError(f"{junk}: not a judgement of this dialogue", "junk_rationale")
    return tuple(scores)


def _unwrap(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("<think>"):
        match = _THINK.match(stripped)
        if match is None:
            raise JudgeOutputError("the reasoning block never closed (no </think>)", "truncated")
        stripped = stripped[match.end() :]
    fenced = _FENCE.match(stripped)
    return fenced.group(1) if fenced else stripped


def _check_keys(data: Mapping[str, Any], expected: Any, where: str) -> None:
    expected = list(expected)
    missing = [key for key in expected if key not in data]
    if missing:
        raise JudgeOutputError(f"{where} lacks {missing}", "missing")
    extra = [key for key in data if key not in expected]
    if extra:
        raise JudgeOutputError(f"{where} has unexpected keys {extra} (expected {expected})", "unexpected_key")


def _entry(entry: Any, criterion_id: str, allowed: tuple[int, ...], placeholders: frozenset[str]) -> tuple[int, str]:
    if not isinstance(entry, dict):
        raise JudgeOutputError(f"{criterion_id} is a {type(entry).__name__}, not an object", "missing")
    _check_keys(entry, ("score", "rationale"), criterion_id)
    raw = entry["score"]
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise JudgeOutputError(f"{criterion_id}.score={raw!r} is not an integer", "bad_score")
    if raw not in allowed:
        raise JudgeOutputError(f"{criterion_id}.score={raw} is not on the scale {list(allowed)}", "bad_score")
    rationale = entry["rationale"]
    if not isinstance(rationale, str) or not rationale.strip() or len(rationale) > MAX_RATIONALE_CHARS:
        shown = rationale if not isinstance(rationale, str) else f"a string of {len(rationale)} characters"
        raise JudgeOutputError(
            f"{criterion_id}.rationale must be a non-empty string of at most {MAX_RATIONALE_CHARS} characters, "
            f"got {shown!r}",
            "bad_rationale",
        )
    if placeholder_form(rationale) in placeholders:
        raise JudgeOutputError(
            f"{criterion_id}.rationale {rationale.strip()!r} is the prompt's placeholder copied back, not a rationale",
            "bad_rationale",
        )
    return raw, rationale.strip()


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise _DuplicateKey(f"duplicate keys {duplicates}")
    return dict(pairs)


def _reject_constant(name: str) -> float:
    raise _NonFinite(f"{name} is not valid JSON")
