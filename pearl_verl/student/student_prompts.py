"""Prompts and strict parsers of the LLM backend's roles: planner, realiser, refiner.

Every role sees the dialogue as chat messages from the student's side (tutor = ``user``, student =
``assistant``) after a system message that carries the problem, the profile c in words, the mastery
m^t in bands, and the role's task. The planner answers one JSON object; the realiser and refiner
answer the student's message as plain text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pearl_verl.dialogue.episode import STUDENT, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import TRAITS, CognitiveProfile
from pearl_verl.errors import InputError
from pearl_verl.knowledge.curriculum import Curriculum
from pearl_verl.knowledge.decomposition import Decomposition
from pearl_verl.knowledge.extract import parse_json_object
from pearl_verl.llm.chat_types import Message
from pearl_verl.student.mastery import mastery_band
from pearl_verl.student.offline_realiser import setup_of
from pearl_verl.student.planner import Plan
from pearl_verl.student.taxonomy import ATTEMPT_DEFINITIONS, BEHAVIOUR_DEFINITIONS, BEHAVIOURS, taxonomy_table

TRAIT_WORDS: dict[str, tuple[str, str, str]] = {
    "activeness": (
        "rarely speaks up or volunteers ideas",
        "takes part when asked",
        "eagerly volunteers ideas and questions",
    ),
    "perseverance": (
        "gives up quickly when stuck",
        "keeps trying for a while",
        "keeps trying even after several mistakes",
    ),
    "comprehension": (
        "often misunderstands explanations",
        "understands clear explanations",
        "quickly understands explanations",
    ),
    "expressiveness": (
        "writes very short, vague messages",
        "writes short, clear messages",
        "explains their thinking in full sentences",
    ),
    "attention": (
        "is easily distracted and drifts off-topic",
        "mostly stays focused",
        "stays fully focused on the problem",
    ),
}
LENGTH_BY_EXPRESSIVENESS = ("one short sentence", "one or two short sentences", "two or three sentences")


def profile_text(profile: CognitiveProfile) -> str:
    """The profile as lines ``- trait (level/3): behaviour``."""
    return "\n".join(f"- {t} ({getattr(profile, t)}/3): {TRAIT_WORDS[t][getattr(profile, t) - 1]}" for t in TRAITS)


def mastery_text(mastery: Mapping[str, float], curriculum: Curriculum) -> str:
    """The mastery state as lines ``- unit name: band (value)``."""
    return "\n".join(f"- {curriculum.units[u].name}: {mastery_band(v)} ({v:.2f})" for u, v in mastery.items())


def dialogue_messages(turns: Sequence[DialogueTurn]) -> list[Message]:
    """The dialogue from the student's side: student turns as ``assistant``, tutor turns as ``user``."""
    return [{"role": "assistant" if t.role == STUDENT else "user", "content": t.text} for t in turns]


def attempt_instruction(plan: Plan, problem: Problem, decomposition: Decomposition) -> str:
    """What the message must do mathematically, with the concrete content the cognitive model fixed."""
    step = decomposition.steps[plan.step].text if plan.step is not None else ""
    if plan.leave:
        return "You are fed up: say you want to stop and end the conversation. Make no attempt."
    if plan.confused:
        return "You cannot make sense of the tutor's last message: say so and ask for help. Make no attempt."
    if plan.conclude:
        return "You have solved the problem: thank the tutor and end the conversation. Make no new attempt."
    if plan.attempt == "correct" and plan.final:
        return f"State the final answer {problem.answer}; it must be the last number in your message."
    if plan.attempt == "correct":
        result = f" and state its result {plan.value}" if plan.value else ""
        return f"Correctly carry out this step{result}: {step}"
    if plan.attempt == "partial":
        return f"Set up this step but do not finish it and do not state its result: {setup_of(step)}"
    if plan.attempt == "incorrect":
        method = (
            " because of a wrong method (for example the wrong operation)" if plan.misconception else " through a slip"
        )
        if plan.value is None:
            return f"Make a plausible mistake{method} on this step: {setup_of(step)}"
        return f"Work on this step but get it wrong{method}: commit to the value {plan.value}. Step: {setup_of(step)}"
    return "Make no mathematical attempt in this message: no calculation and no answer."


PLANNER_INSTRUCTION = """You plan the next turn of a simulated math student in a tutoring dialogue. You do \
not write the message; you choose how the student behaves in it.

Problem: {question}

Student profile (1 = low, 3 = high):
{profile}

Student's knowledge (mastery of the units this problem needs):
{mastery}

This turn's attempt, fixed by the student's knowledge: {attempt}
{attempt_definition}

Behaviour labels:
{taxonomy}

Choose the behaviour labels (zero to four) this student shows in the next message, given the \
profile, the attempt and the dialogue so far, especially the tutor's latest message. Set "leave" to \
true only if the student is frustrated enough to end the session now.
Answer with ONE JSON object and nothing else: {{"behaviours": ["label", ...], "leave": false}}"""


def planner_messages(
    plan: Plan,
    problem: Problem,
    turns: Sequence[DialogueTurn],
    profile: CognitiveProfile,
    mastery: Mapping[str, float],
    curriculum: Curriculum,
) -> list[Message]:
    """The planner's prompt for a drawn attempt ``plan``."""
    system = PLANNER_INSTRUCTION.format(
        question=problem.question,
        profile=profile_text(profile),
        mastery=mastery_text(mastery, curriculum),
        attempt=plan.attempt,
        attempt_definition=ATTEMPT_DEFINITIONS[plan.attempt],
        taxonomy=taxonomy_table(),
    )
    return [{"role": "system", "content": system}, *dialogue_messages(turns)]


@dataclass(frozen=True)
class PlannerReply:
    """A parsed planner reply."""

    behaviours: tuple[str, ...]
    leave: bool


PLANNER_SCHEMA = json.dumps({
    "title": "student_plan",
    "type": "object",
    "properties": {
        "behaviours": {"type": "array", "items": {"type": "string", "enum": list(BEHAVIOURS)}},
        "leave": {"type": "boolean"},
        "reason": {"type": "string"},
    },
    "required": ["behaviours", "leave"],
    "additionalProperties": False,
})
"""The planner reply's JSON Schema, for servers with structured output (:func:`parse_planner` checks it)."""


def parse_planner(text: str) -> PlannerReply:
    """Parse ``{"behaviours": [...], "leave": bool}`` strictly (an optional string ``reason`` is allowed).

    Raises:
        InputError: for anything else, including labels outside the taxonomy.
    """
    data: dict[str, Any] = parse_json_object(text)
    if not {"behaviours", "leave"} <= set(data) <= {"behaviours", "leave", "reason"}:
        raise InputError(f"planner reply has keys {sorted(data)}; expected behaviours, leave (and optionally reason)")
    labels, leave = data["behaviours"], data["leave"]
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or not isinstance(leave, bool):
        raise InputError("planner reply: behaviours must be a list of strings and leave a boolean")
    unknown = sorted(set(labels) - set(BEHAVIOURS))
    if unknown:
        raise InputError(f"planner reply has unknown behaviour label(s) {unknown}")
    return PlannerReply(tuple(x for x in BEHAVIOURS if x in labels), leave)


REALISER_INSTRUCTION = """You are role-playing a student in a one-on-one math tutoring chat. Write only \
the student's next message.

Problem: {question}

Your personality (1 = low, 3 = high):
{profile}

What you know (mastery of the units this problem needs; you cannot do what you have not mastered):
{mastery}
{misconception}
Your intent for this message:
- Attempt: {attempt}
- Behaviours to show:
{behaviours}

Rules: write {length} in the voice of a real student of this profile. Reply to the tutor's latest \
message. Do not state the final answer {answer} unless the attempt above says so. Never mention these \
instructions, mastery levels or labels, never speak as the tutor, and never say you are an AI."""


def realiser_messages(
    plan: Plan,
    problem: Problem,
    decomposition: Decomposition,
    turns: Sequence[DialogueTurn],
    profile: CognitiveProfile,
    mastery: Mapping[str, float],
    curriculum: Curriculum,
    misconception: str | None,
) -> list[Message]:
    """The realiser's prompt for ``plan``."""
    behaviours = "\n".join(f"  - {BEHAVIOUR_DEFINITIONS[b]}" for b in plan.labels) or "  - (no particular behaviour)"
    belief = f"You believe this (it is wrong, but you do not know that yet): {misconception}\n" if misconception else ""
    system = REALISER_INSTRUCTION.format(
        question=problem.question,
        profile=profile_text(profile),
        mastery=mastery_text(mastery, curriculum),
        misconception=belief,
        attempt=attempt_instruction(plan, problem, decomposition),
        behaviours=behaviours,
        length=LENGTH_BY_EXPRESSIVENESS[profile.expressiveness - 1],
        answer=problem.answer,
    )
    return [{"role": "system", "content": system}, *dialogue_messages(turns)]


REFINE_INSTRUCTION = """You edit a simulated student's message so that it matches the student's intent. \
Keep the student's voice and everything that is already right; change only what the problems require. \
Answer with the corrected message only."""


def refine_messages(
    draft: str, issues: Sequence[str], plan: Plan, problem: Problem, decomposition: Decomposition
) -> list[Message]:
    """The refiner's prompt: intent, draft and the problems the cheap check found."""
    intent = attempt_instruction(plan, problem, decomposition)
    labels = ", ".join(plan.labels) or "none"
    problems = "\n".join(f"- {issue}" for issue in issues)
    user = f"Intent: {intent}\nBehaviours: {labels}\n\nDraft message:\n{draft}\n\nProblems:\n{problems}"
    return [{"role": "system", "content": REFINE_INSTRUCTION}, {"role": "user", "content": user}]
