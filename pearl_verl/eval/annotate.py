"""Behaviour annotation of student turns: an LLM annotator with a strict schema, or planned labels.

The paper has a strong external model give every student reply after the opening one attempt
outcome and zero or more of the 13 behaviour labels. :class:`LLMAnnotator` does that over any
OpenAI-compatible endpoint, one call per dialogue (all of its student replies, in order, so the
annotator sees the context), with the taxonomy of :mod:`pearl_verl.student.taxonomy` as the label
schema. Its output must be exactly::

    {"turns": [{"turn": 1, "attempt": "<correct|partial|incorrect|none>", "labels": ["<label>", ...]}, ...]}

with one entry per student reply, numbered 1..n in order, and only taxonomy labels. Anything else is
a parse failure: the call is repeated up to ``parse_retries`` times and the dialogue is then flagged
(left out of the statistics and counted), never guessed.

:class:`PlannedLabels` is the offline path: the simulator's own planned intent and attempt from its
trace. Those are PLANNED LABELS, NOT ANNOTATIONS: they show what the simulator meant to do, not what
an annotator reads in its messages; reports say so.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pearl_verl.dialogue.episode import STUDENT, EpisodeRecord
from pearl_verl.dialogue.student_contract import ATTEMPT_OUTCOMES
from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, Message, SamplingConfig
from pearl_verl.row_kinds import stamped
from pearl_verl.student.diversity import LabelledTurn
from pearl_verl.student.taxonomy import ATTEMPT_DEFINITIONS, BEHAVIOURS, taxonomy_table

logger = logging.getLogger(__name__)

PLANNED_SOURCE = "planned labels, not annotations"

_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*?)\n?```\Z", re.DOTALL)
_THINK = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)

ANNOTATOR_INSTRUCTION = (
    "You annotate the student's messages in a math tutoring dialogue between a tutor and a (possibly simulated) "
    "student. For EVERY student reply after the opening message, give exactly one attempt outcome and zero or "
    "more behaviour labels. Judge only what the message itself shows.\n\n"
    "Attempt outcomes (exactly one per reply):\n"
    + "\n".join(f"- {k}: {v}" for k, v in ATTEMPT_DEFINITIONS.items())
    + "\n\nBehaviour labels (any number per reply, including none):\n"
    + taxonomy_table()
    + "\n\nAnswer with one JSON object and nothing else:\n"
    '{"turns": [{"turn": 1, "attempt": "<outcome>", "labels": ["<label>", ...]}, ...]}\n'
    "with one entry per student reply, numbered from 1 in order, using only the outcome and label names above."
)


class AnnotationError(InputError):
    """The annotator's output violates the schema."""


@dataclass(frozen=True)
class Annotation:
    """The labels of one dialogue's student replies.

    Attributes:
        ok: False when the dialogue could not be annotated (then ``turns`` is empty).
        turns: one labelled turn per student reply after the opening.
        source: :data:`PLANNED_SOURCE` or ``llm:<model>``.
        error: why it failed, when not ok.
        attempts: annotator calls made.
    """

    ok: bool
    turns: tuple[LabelledTurn, ...] = ()
    source: str = ""
    error: str | None = None
    attempts: int = 0


class Annotator(Protocol):
    """Labels a dialogue's student replies; never raises for a failing backend."""

    source: str

    async def annotate(self, episode: EpisodeRecord) -> Annotation: ...


def student_replies(episode: EpisodeRecord) -> list[str]:
    """The student's messages after the opening (the turns that get labels)."""
    return [t.text for t in episode.turns if t.role == STUDENT][1:]


class PlannedLabels:
    """The offline path: the simulator's planned attempt and intent per reply (not annotations)."""

    source = PLANNED_SOURCE

    async def annotate(self, episode: EpisodeRecord) -> Annotation:
        states = episode.student_trace[1:]
        if len(states) != len(student_replies(episode)):
            return Annotation(False, source=self.source, error="the trace does not match the student turns")
        turns = tuple(LabelledTurn(s.attempt, frozenset(s.intent) & frozenset(BEHAVIOURS)) for s in states)
        return Annotation(True, turns, self.source)


def annotation_messages(episode: EpisodeRecord) -> list[Message]:
    """The annotator's prompt: instruction, then the problem and the numbered dialogue."""
    lines = [f"Problem: {episode.problem.question}", f"Correct final answer: {episode.problem.answer}", "", "Dialogue:"]
    reply = 0
    for index, turn in enumerate(episode.turns):
        if turn.role == STUDENT:
            tag = "Student (opening, not annotated)" if index == 0 else f"Student reply {reply + 1}"
            reply += index > 0
        else:
            tag = "Tutor"
        lines.append(f"[{tag}]: {turn.text}")
    lines += ["", f"Annotate all {reply} student replies."]
    return [{"role": "system", "content": ANNOTATOR_INSTRUCTION}, {"role": "user", "content": "\n".join(lines)}]


def parse_annotation(text: str, replies: int) -> tuple[LabelledTurn, ...]:
    """The labelled replies in ``text``, checked against the schema.

    Raises:
        AnnotationError: naming the first violation.
    """
    body = text.strip()
    if body.startswith("<think>"):
        match = _THINK.match(body)
        if match is None:
            raise AnnotationError("the reasoning block never closed")
        body = body[match.end() :]
    fenced = _FENCE.match(body)
    try:
        data: Any = json.loads(fenced.group(1) if fenced else body)
    except json.JSONDecodeError as exc:
        raise AnnotationError(f"not one JSON object: {exc.msg}") from None
    if not isinstance(data, dict) or set(data) != {"turns"} or not isinstance(data["turns"], list):
        raise AnnotationError('expected exactly {"turns": [...]}')
    if len(data["turns"]) != replies:
        raise AnnotationError(f"{len(data['turns'])} entries for {replies} student replies")
    return tuple(_entry(entry, number) for number, entry in enumerate(data["turns"], start=1))


def _entry(entry: Any, number: int) -> LabelledTurn:
    if not isinstance(entry, dict) or set(entry) != {"turn", "attempt", "labels"}:
        raise AnnotationError(f"entry {number} must have exactly the keys turn, attempt, labels")
    if entry["turn"] != number:
        raise AnnotationError(f"entry {number} is numbered {entry['turn']!r}")
    if entry["attempt"] not in ATTEMPT_OUTCOMES:
        raise AnnotationError(f"entry {number}: attempt {entry['attempt']!r} is not one of {list(ATTEMPT_OUTCOMES)}")
    labels = entry["labels"]
    if not isinstance(labels, list) or any(label not in BEHAVIOURS for label in labels):
        raise AnnotationError(f"entry {number}: labels {labels!r} must be a list of taxonomy labels")
    if len(set(labels)) != len(labels):
        raise AnnotationError(f"entry {number}: labels {labels!r} repeat a label")
    return LabelledTurn(entry["attempt"], frozenset(labels))


class LLMAnnotator:
    """Annotates with a chat endpoint (the paper uses a strong external model).

    Args:
        backend: the annotator's chat backend.
        model: its name, recorded as the annotation source.
        sampling: annotator sampling (deterministic by default).
        parse_retries: extra calls after an output that fails the schema.
    """

    DEFAULT_MAX_TOKENS = 4096
    """``--annotator-max-tokens``: a 20-reply annotation is a few hundred tokens; the rest is room for a
    reasoning model's ``<think>`` block, which the parser strips (BENCHMARKS.md, reply lengths)."""

    def __init__(
        self, backend: ChatBackend, model: str, sampling: SamplingConfig | None = None, parse_retries: int = 2
    ) -> None:
        if parse_retries < 0:
            raise InputError(f"parse_retries={parse_retries} must be >= 0.")
        self.backend = backend
        self.source = f"llm:{model}"
        self.sampling = sampling or SamplingConfig(temperature=0.0, max_tokens=self.DEFAULT_MAX_TOKENS)
        self.parse_retries = parse_retries

    async def annotate(self, episode: EpisodeRecord) -> Annotation:
        replies = len(student_replies(episode))
        if replies == 0:
            return Annotation(True, (), self.source)
        messages = annotation_messages(episode)
        error = ""
        for attempt in range(1, self.parse_retries + 2):
            try:
                result = await self.backend.chat(messages, self.sampling)
            except LLMCallError as exc:
                return Annotation(False, source=self.source, error=f"annotator call failed: {exc}", attempts=attempt)
            try:
                if result.finish_reasons and result.finish_reasons[0] == "length":
                    raise AnnotationError("the output was cut off at max_tokens")
                return Annotation(True, parse_annotation(result.text, replies), self.source, attempts=attempt)
            except AnnotationError as exc:
                error = str(exc)
                logger.info(
                    "annotation of %s failed the schema (attempt %d): %s", episode.problem.problem_id, attempt, exc
                )
        return Annotation(
            False, source=self.source, error=f"unparsable annotation: {error}", attempts=self.parse_retries + 1
        )


def annotation_row(key: str, meta: dict[str, Any], annotation: Annotation) -> dict[str, Any]:
    """The JSONL line of one annotated dialogue."""
    return stamped("annotation", {
        "id": key,
        **meta,
        "source": annotation.source,
        "ok": annotation.ok,
        "turns": [{"attempt": t.attempt, "labels": sorted(t.labels)} for t in annotation.turns],
        "error": annotation.error,
        "attempts": annotation.attempts,
    })


def turns_of(row: dict[str, Any]) -> list[LabelledTurn]:
    """The labelled turns of an annotation line."""
    return [LabelledTurn(t["attempt"], frozenset(t["labels"])) for t in row["turns"]]


def labelled(rows: Sequence[dict[str, Any]]) -> list[list[LabelledTurn]]:
    """Each ok annotation line's labelled turns (the input of the diversity statistics)."""
    return [turns_of(r) for r in rows if r["ok"]]
