"""The probe judge rewards exactly the surface features it documents, and never judges an empty tutor."""

import asyncio

from pearl_verl.dims import DIMENSIONS
from pearl_verl.episode import STUDENT, TUTOR, DialogueTurn, EpisodeRecord
from pearl_verl.local.probe_judge import NEUTRAL, ProbeJudge
from pearl_verl.problem import Problem
from pearl_verl.student.types import CognitiveProfile, StudentCondition

PROBLEM = Problem("p", "What is 2 + 3?", "2 + 3 = 5", "5")
CONDITION = StudentCondition(CognitiveProfile())


def _judge(*tutor_texts):
    turns = [DialogueTurn(STUDENT, "I am stuck.")]
    for text in tutor_texts:
        turns += [DialogueTurn(TUTOR, text), DialogueTurn(STUDENT, "ok")]
    return asyncio.run(ProbeJudge().judge(EpisodeRecord(PROBLEM, CONDITION, tuple(turns), (), "turn_limit")))


def test_scores_follow_brevity_questions_and_encouragement():
    terse = _judge("Good start! What is 2 + 3?", "Nice. Which operation?")
    verbose = _judge("Let me explain this very carefully. " * 6, "Now we continue with the explanation of addition. " * 3)
    assert terse.ok and verbose.ok and terse.gate == 1
    assert terse.dims["load"] > verbose.dims["load"] and verbose.dims["load"] == 0.0
    assert terse.dims["guide"] == 1.0 and verbose.dims["guide"] == 0.0
    assert terse.dims["emotion"] == 1.0 and verbose.dims["emotion"] == 0.0
    half = _judge("Great, what next?", "Add them.")
    assert half.dims["guide"] == 0.5 and half.dims["emotion"] == 0.5
    others = set(DIMENSIONS) - {"load", "guide", "emotion"}
    assert all(terse.dims[d] == NEUTRAL == verbose.dims[d] for d in others)


def test_a_dialogue_without_tutor_turns_is_a_failed_judgment():
    result = _judge()
    assert not result.ok and result.error
