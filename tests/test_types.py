"""Shared records round-trip through plain dicts (JSONL, parquet extra_info) and validate."""

import json

import pytest

from pearl_verl.dialogue.episode import DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition, StudentTurnState


def _episode(make_episode, end_reason="tutor_ended"):
    """An episode with every field set: a condition with mastery, seed and misconception, a full trace."""
    problem = Problem("gsm8k-1", "What is 2+3?", "2+3=5", "5", "gsm8k")
    condition = StudentCondition(CognitiveProfile(1, 2, 3, 1, 2), mastery={"addition": 0.4}, seed=7, misconception="2+3=6")
    trace = (
        StudentTurnState(0, ("help_seeking",), "none", {"addition": 0.4}),
        StudentTurnState(1, ("correct_attempt",), "correct", {"addition": 0.6}, solved=False),
    )
    return make_episode(["help", "What is 2+2?", "4"], end_reason, problem=problem, trace=trace, condition=condition)


def test_episode_round_trips_through_json(make_episode):
    episode = _episode(make_episode)
    assert EpisodeRecord.from_dict(json.loads(json.dumps(episode.to_dict()))) == episode
    assert episode.tutor_turns == 1 and episode.ended_normally


@pytest.mark.parametrize(("reason", "ended_normally"), [("student_concluded", True), ("turn_limit", False), ("student_error", False)])
def test_ended_normally_follows_the_end_reason(make_episode, reason, ended_normally):
    assert _episode(make_episode, reason).ended_normally is ended_normally


def test_an_unknown_end_reason_is_refused(make_episode):
    with pytest.raises(ValueError, match=r"end_reason='gave_up' is not one of"):
        _episode(make_episode, "gave_up")


def test_profile_ability_levels():
    assert CognitiveProfile(1, 1, 1, 1, 1).ability == "low" and CognitiveProfile(2, 2, 1, 2, 1).ability == "low"
    assert CognitiveProfile(2, 2, 2, 2, 1).ability == "medium" and CognitiveProfile(3, 2, 2, 2, 2).ability == "medium"
    assert CognitiveProfile(3, 3, 2, 2, 2).ability == "high" and CognitiveProfile(3, 3, 3, 3, 3).total == 15


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: CognitiveProfile(activeness=4), r"activeness=4 must be 1, 2 or 3"),
        (lambda: Problem("p", "  ", "", "1"), r"Problem.question is empty \(problem_id='p'\)"),
        (lambda: DialogueTurn("teacher", "x"), r"role='teacher'"),
        (lambda: StudentCondition.from_dict({"profil": {}}), r"Unknown StudentCondition field\(s\) \['profil'\]"),
        (lambda: Problem.from_dict({"problem_id": "p", "question": "q", "answer": "1", "reference_solution": "", "x": 1}), r"\['x'\]"),
    ],
)
def test_validation(build, match):
    with pytest.raises(ValueError, match=match):
        build()
