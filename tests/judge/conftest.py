"""Fixtures for judge tests: small episodes and judge outputs in the exact output contract."""

import json

import pytest

from pearl_verl.dialogue.episode import DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.rubric import RUBRIC
from pearl_verl.student.types import CognitiveProfile, StudentCondition, StudentTurnState

PROBLEM = Problem(
    "gsm8k-x",
    "Tom has 3 boxes of 4 apples and eats 2. How many are left?",
    "Tom has 3 * 4 = 12 apples.\nAfter eating 2 he has 12 - 2 = 10 apples.",
    "10",
    "gsm8k",
)


def build_episode(texts, end_reason="tutor_ended", problem=PROBLEM, trace=None, condition=None):
    """An episode from alternating texts (student first); the trace defaults to one state per student turn."""
    turns = tuple(DialogueTurn("student" if i % 2 == 0 else "tutor", t) for i, t in enumerate(texts))
    if trace is None:
        n_student = sum(t.role == "student" for t in turns)
        trace = tuple(StudentTurnState(i, ("answer",), "none", {"mult": 0.5}) for i in range(n_student))
    return EpisodeRecord(
        problem, condition or StudentCondition(CognitiveProfile(1, 2, 3, 2, 1)), turns, trace, end_reason
    )


def output_text(overrides=None, rationale="evidence in turn 2", drop=(), extra=None):
    """A judge output (JSON text): every criterion at its top score unless overridden by id.

    Each criterion's rationale is ``rationale`` followed by the criterion in words, ``"evidence in turn 2
    (final answer)"``: one rationale for every criterion is junk to the parser (pearl_verl.judge.sanity).
    """
    overrides = overrides or {}
    body = {}
    for dimension in DIMENSIONS:
        body[dimension] = {
            c.key: {"score": overrides.get(c.id, c.high), "rationale": f"{rationale} ({c.key.replace('_', ' ')})"}
            for c in RUBRIC.for_dimension(dimension)
            if c.id not in drop
        }
    body.update(extra or {})
    return json.dumps(body)


@pytest.fixture
def episode():
    return build_episode(
        ["Can you help me?", "What is 3 times 4?", "12", "Good. And after eating 2?", "10", "Well done!"]
    )


@pytest.fixture
def make_episode():
    return build_episode


@pytest.fixture
def make_output():
    return output_text


MATHDIAL_HISTORY = (
    "Tutor: Hi, could you please provide a step-by-step solution for the question below? The question is: "
    f"{PROBLEM.question}\xa0\n\xa0Student: 3 + 4 = 7 apples and 7 - 2 = 5.\xa0\n\xa05"
)
"""An MRBench MathDial-style history: the question in the opening tutor turn, a student's wrong answer last."""
MATHDIAL_SOLUTION = PROBLEM.reference_solution + "\n 10"
"""An MRBench MathDial-style worked solution: the final answer alone on the last line."""


def mrbench_row(responses, split="test", conversation_id="c1", history=MATHDIAL_HISTORY,
                solution=MATHDIAL_SOLUTION, topic="Not Available", data="MathDial"):
    """One MRBench row; ``responses`` is ``{tutor: (text, {dimension: label})}`` (only the labels given)."""
    return {
        "conversation_id": conversation_id,
        "conversation_history": history,
        "Data": data,
        "Split": split,
        "Topic": topic,
        "Ground_Truth_Solution": solution,
        "anno_llm_responses": {tutor: {"response": text, "annotation": labels}
                               for tutor, (text, labels) in responses.items()},
    }


@pytest.fixture
def make_mrbench_row():
    return mrbench_row


@pytest.fixture
def write_mrbench(tmp_path):
    """Writes rows as an MRBench JSON file in tmp_path and returns its path."""

    def write(rows, name="mrbench.json"):
        path = tmp_path / name
        path.write_text(json.dumps(rows), encoding="utf-8")
        return path

    return write
