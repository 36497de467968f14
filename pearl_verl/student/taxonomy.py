"""The behaviour taxonomy: one attempt outcome and zero or more behaviour labels per student turn.

It follows the paper's simulator analysis (appendix "Student-Simulator Analyses"): every student
reply after the opening gets exactly one attempt outcome (correct / partially correct / incorrect /
no attempt) and any number of labels from a 13-category behaviour taxonomy. The paper names ten of
the categories (misconception, uncertainty/confusion, clarification/help-seeking, self-correction,
persistence/retry, feedback uptake, metacognitive monitoring, positive engagement,
frustration/disengagement, off-topic/inattention); the other three are ours: answer seeking,
guessing and explaining reasoning, which real tutoring transcripts show often and which the
paper's list leaves without a home. The planner emits these labels as the intent z^t; the
evaluation suite annotates real and simulated turns with the same definitions.
"""

from __future__ import annotations

from collections.abc import Iterable

from pearl_verl.dialogue.student_contract import ATTEMPT_OUTCOMES
from pearl_verl.errors import InputError

ATTEMPT_DEFINITIONS: dict[str, str] = {
    "correct": "Correct attempt: the student carries out a step or states the final answer correctly.",
    "partial": "Partially correct: right approach or set-up, but the result is missing, incomplete or partly right.",
    "incorrect": "Incorrect attempt: the student commits to a wrong result or a wrong method.",
    "none": "No attempt: the student makes no mathematical attempt in this turn.",
}
assert tuple(ATTEMPT_DEFINITIONS) == ATTEMPT_OUTCOMES

BEHAVIOUR_DEFINITIONS: dict[str, str] = {
    "misconception": "States or acts on a systematic wrong belief (wrong operation, wrong concept), not a slip.",
    "uncertainty": "Expresses uncertainty or confusion about the problem, a step or the tutor's message.",
    "help_seeking": "Asks the tutor for clarification, a hint or an explanation of a specific point.",
    "self_correction": "Revises their own earlier answer or step without being given the fix.",
    "persistence": "Tries again after a failed or incomplete attempt instead of giving up.",
    "feedback_uptake": "Visibly uses the tutor's hint, question or correction in this turn.",
    "metacognitive_monitoring": "Comments on their own understanding or checks their own work.",
    "positive_engagement": "Shows enthusiasm, interest or enjoyment.",
    "frustration": "Shows frustration, discouragement or disengagement, up to wanting to stop.",
    "off_topic": "Says something unrelated to the problem or shows lapsed attention.",
    "answer_seeking": "Asks the tutor to just give the answer or do the work.",
    "guessing": "Offers a value without any reasoning, hoping it is right.",
    "explaining_reasoning": "Explains why a step works or how they got a result, in their own words.",
}

BEHAVIOURS: tuple[str, ...] = tuple(BEHAVIOUR_DEFINITIONS)
"""The 13 behaviour labels, in a fixed order (intents list them in this order)."""

BEHAVIOUR_TITLES: dict[str, str] = {
    "misconception": "Misconception",
    "uncertainty": "Uncertainty / confusion",
    "help_seeking": "Clarification / help-seeking",
    "self_correction": "Self-correction",
    "persistence": "Persistence / retry",
    "feedback_uptake": "Feedback uptake",
    "metacognitive_monitoring": "Metacognitive monitoring",
    "positive_engagement": "Positive engagement",
    "frustration": "Frustration / disengagement",
    "off_topic": "Off-topic / inattention",
    "answer_seeking": "Answer seeking",
    "guessing": "Guessing",
    "explaining_reasoning": "Explaining reasoning",
}
"""Display names; the first ten are the paper's table rows."""


def ordered_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """Behaviour labels deduplicated and in :data:`BEHAVIOURS` order.

    Raises:
        InputError: for a label outside the taxonomy.
    """
    wanted = set(labels)
    unknown = sorted(wanted - set(BEHAVIOURS))
    if unknown:
        raise InputError(f"Unknown behaviour label(s) {unknown}; valid labels: {list(BEHAVIOURS)}.")
    return tuple(label for label in BEHAVIOURS if label in wanted)


def taxonomy_table() -> str:
    """``label: definition`` lines for prompts (planner, realiser, annotators)."""
    return "\n".join(f"- {label}: {definition}" for label, definition in BEHAVIOUR_DEFINITIONS.items())
