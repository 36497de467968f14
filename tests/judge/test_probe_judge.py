"""The probe judge rewards exactly the property it documents (questions), and never judges an empty tutor."""

import asyncio

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.probe import QUESTIONS_FOR_FULL, ProbeJudge


def _judge(make_episode, *tutor_texts, prop="questions"):
    texts = ["I am stuck? Help?"]  # the student's turns never count
    for text in tutor_texts:
        texts += [text, "Ok?"]  # a tutor turn, then the student's reply
    return asyncio.run(ProbeJudge(prop).judge(make_episode(texts, "turn_limit")))


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("Add them.", "Now write it down."), 0.0),
        (("What is 2 + 3?", "Add them."), 1 / QUESTIONS_FOR_FULL),
        (("Why? How?", "Which operation?"), 1.0),
    ],
)
def test_every_dimension_counts_the_tutors_question_marks(make_episode, texts, expected):
    result = _judge(make_episode, *texts)
    assert result.ok and result.gate == 1
    assert set(result.dims) == set(DIMENSIONS)
    assert all(value == pytest.approx(expected) for value in result.dims.values())


def test_capital_openings_scores_the_share_of_turns_opening_with_a_capital(make_episode):
    result = _judge(make_episode, "What now", "add them", "7 apples", "Yes", prop="capital_openings")
    assert result.ok and all(value == 0.5 for value in result.dims.values())


def test_an_unknown_property_is_refused():
    with pytest.raises(ValueError, match="not one of"):
        ProbeJudge("brevity")


def test_a_dialogue_without_tutor_turns_is_a_failed_judgment(make_episode):
    result = _judge(make_episode)
    assert not result.ok and result.error
