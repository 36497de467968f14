"""The probe judge rewards exactly the property it documents (questions), and never judges an empty tutor."""

import asyncio

import pytest

from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.probe import QUESTIONS_FOR_FULL, ProbeJudge
from pearl_verl.student.types import CognitiveProfile, StudentCondition

PROBLEM = Problem("p", "What is 2 + 3?", "2 + 3 = 5", "5")
CONDITION = StudentCondition(CognitiveProfile())


def _judge(*tutor_texts, prop="questions"):
    turns = [DialogueTurn(STUDENT, "I am stuck? Help?")]  # the student's turns never count
    for text in tutor_texts:
        turns += [DialogueTurn(TUTOR, text), DialogueTurn(STUDENT, "Ok?")]
    episode = EpisodeRecord(PROBLEM, CONDITION, tuple(turns), (), "turn_limit")
    return asyncio.run(ProbeJudge(prop).judge(episode))


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("Add them.", "Now write it down."), 0.0),
        (("What is 2 + 3?", "Add them."), 1 / QUESTIONS_FOR_FULL),
        (("Why? How?", "Which operation?"), 1.0),
    ],
)
def test_every_dimension_counts_the_tutors_question_marks(texts, expected):
    result = _judge(*texts)
    assert result.ok and result.gate == 1
    assert set(result.dims) == set(DIMENSIONS)
    assert all(value == pytest.approx(expected) for value in result.dims.values())


def test_capital_openings_scores_the_share_of_turns_opening_with_a_capital():
    result = _judge("What now", "add them", "7 apples", "Yes", prop="capital_openings")
    assert result.ok and all(value == 0.5 for value in result.dims.values())


def test_an_unknown_property_is_refused():
    with pytest.raises(ValueError, match="not one of"):
        ProbeJudge("brevity")


def test_a_dialogue_without_tutor_turns_is_a_failed_judgment():
    result = _judge()
    assert not result.ok and result.error
