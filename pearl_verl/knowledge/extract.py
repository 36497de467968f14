"""Knowledge-unit extraction: the LLM prompt, its strict output schema and parser, and a rule extractor.

The LLM extractor sees the problem, its numbered reference steps and the curriculum vocabulary, and
must answer with one JSON object (optionally inside one ```json fence)::

    {"units": ["<unit id>", ...], "steps": [["<unit id>", ...], ...]}

``units`` are the units the whole problem needs; ``steps`` has exactly one list per reference step.
Names are normalised to canonical ids (:meth:`Curriculum.normalise`: ids, names, aliases, plurals,
close spellings). Anything else is a parse failure: not JSON, extra or missing keys, wrong types,
a wrong number of step lists, or a name that matches no unit.

The rule extractor (``rules-v1``) is the offline backend's stand-in: a unit belongs to a step when
one of its cues occurs in the step, and to the problem when it occurs in a step or the question.
It is deterministic, needs no network, and is what the LLM extractor falls back to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pearl_verl.dialogue.problem import Problem
from pearl_verl.errors import InputError
from pearl_verl.knowledge.curriculum import Curriculum
from pearl_verl.knowledge.decomposition import Decomposition, DecompositionError, build_decomposition, reference_steps
from pearl_verl.llm.chat_types import Message

RULE_EXTRACTOR = "rules-v1"
EXTRACTION_PROMPT_VERSION = "x1"
DEFAULT_UNIT = "word_problems"
"""The unit a problem gets when no cue matches anything (every problem needs some unit)."""

_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.S)

EXTRACTION_INSTRUCTION = """You analyse math problems for a tutoring system. List the knowledge units a \
student needs to solve the problem the way the reference solution does.

Use ONLY unit ids from this vocabulary (id: name - description):
{vocabulary}

Rules:
- Include a unit only if the reference solution actually applies it; do not list prerequisites that \
the solution never uses.
- For each numbered reference step, list the units that step applies (an empty list is allowed).
- Every unit in a step list must also appear in "units".
- Answer with ONE JSON object and nothing else, exactly in this form:
{{"units": ["unit_id", ...], "steps": [["unit_id", ...], ...]}}
"steps" must contain exactly {n_steps} lists, one per reference step, in order."""


def extraction_messages(problem: Problem, curriculum: Curriculum) -> list[Message]:
    """The extraction prompt for ``problem``: system instruction with the vocabulary, user turn with the problem."""
    steps = reference_steps(problem)
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))
    system = EXTRACTION_INSTRUCTION.format(vocabulary=curriculum.prompt_table(), n_steps=len(steps))
    user = f"Problem:\n{problem.question}\n\nReference solution steps:\n{numbered}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse a reply that must be exactly one JSON object, optionally wrapped in one ```json fence.

    Raises:
        InputError: when the reply is anything else (prose around the JSON included).
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InputError(f"reply is not JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(value, dict):
        raise InputError(f"reply is JSON {type(value).__name__}, expected an object")
    return value


def extraction_schema(curriculum: Curriculum, n_steps: int) -> str:
    """The extraction reply's JSON Schema (as text) for one problem, for servers with structured output.

    Unit names are the vocabulary's ids and ``steps`` has exactly one list per reference step;
    :func:`parse_extraction` checks the reply either way.
    """
    unit = {"type": "string", "enum": sorted(curriculum.units)}
    units = {"type": "array", "items": unit}
    return json.dumps({
        "title": "knowledge_units",
        "type": "object",
        "properties": {"units": units, "steps": {"type": "array", "items": units, "minItems": n_steps,
                                                 "maxItems": n_steps}},
        "required": ["units", "steps"],
        "additionalProperties": False,
    })


def parse_extraction(text: str, problem: Problem, curriculum: Curriculum, extractor: str) -> Decomposition:
    """Parse an extraction reply into a :class:`Decomposition` (``source="llm"``).

    Raises:
        DecompositionError: ``malformed`` for anything off the schema, ``unknown_unit`` for names
            that normalise to no unit (listed, with a hint at the vocabulary).
    """
    try:
        data = parse_json_object(text)
    except ValueError as exc:
        raise DecompositionError(f"Extraction reply: {exc}.", "malformed") from exc
    if set(data) != {"units", "steps"}:
        raise DecompositionError(
            f"Extraction reply has keys {sorted(data)}, expected exactly ['steps', 'units'].", "malformed"
        )
    units, steps = data["units"], data["steps"]
    if not _is_str_list(units) or not isinstance(steps, list) or not all(_is_str_list(s) for s in steps):
        raise DecompositionError(
            "Extraction reply: 'units' must be a list of strings, 'steps' a list of such lists.", "malformed"
        )
    n_steps = len(reference_steps(problem))
    if len(steps) != n_steps:
        raise DecompositionError(
            f"Extraction reply has {len(steps)} step lists; the solution has {n_steps} steps.", "malformed"
        )
    unknown = sorted({name for name in [*units, *(u for s in steps for u in s)] if curriculum.normalise(name) is None})
    if unknown:
        raise DecompositionError(
            f"Unknown knowledge unit(s) {unknown}; use ids from the vocabulary only.", "unknown_unit"
        )
    canon_steps = [[curriculum.normalise(name) for name in step] for step in steps]
    canon_units = [curriculum.normalise(name) for name in units]
    if not canon_units and not any(canon_steps):
        raise DecompositionError("Extraction reply lists no units at all.", "malformed")
    return build_decomposition(problem, curriculum, canon_steps, canon_units, "llm", extractor)  # type: ignore[arg-type]


def rule_decomposition(problem: Problem, curriculum: Curriculum, source: str = "rules") -> Decomposition:
    """The offline extractor: cue matching on each reference step and on the question.

    Args:
        problem: the problem.
        curriculum: the vocabulary.
        source: ``rules`` (offline backend) or ``fallback`` (after a failed LLM extraction).
    """
    step_units = [curriculum.units_in(step) for step in reference_steps(problem)]
    question_units = curriculum.units_in(problem.question)
    if not question_units and not any(step_units):
        question_units = (DEFAULT_UNIT,)
    return build_decomposition(problem, curriculum, step_units, question_units, source, RULE_EXTRACTOR)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def repair_message(error: DecompositionError) -> Mapping[str, str]:
    """The user turn sent with a retry after a rejected reply, quoting the problem found."""
    return {"role": "user", "content": f"Your answer was rejected: {error} Answer again with the JSON object only."}
