"""No reward for junk: on the same student turns, clean teaching scores clearly above every kind of junk
tutor turn (pearl_verl.judge.junk), for every CPU judge a recipe or the main job uses."""

import asyncio
import dataclasses
import statistics

import pytest

from pearl_verl.judge.features import extract_features
from pearl_verl.judge.judge_config import JudgeConfig, build_judge
from pearl_verl.judge.junk import (
    CLEAN,
    KINDS,
    clean_with_wrong_attempts,
    teaching_dialogues,
    with_praise_after_wrong,
    with_praise_openings,
    with_tutor_turns,
)
from pearl_verl.judge.tutoring_turns import repeats_itself

MARGIN = 0.3
"""Clean generic questions score about 0.8 on these dialogues; junk must stay this far below."""


@pytest.fixture(scope="module")
def dialogues():
    return teaching_dialogues(16)


def reward(result):
    assert result.ok, result.error
    return sum(result.dims.values()) / len(result.dims)


@pytest.fixture(scope="module", params=["offline", "fitted"])
def judged(request, dialogues):
    """The judge, and the dialogues whose real teaching it finds complete (the others score 0 whatever the tutor)."""
    judge = build_judge(JudgeConfig(backend=request.param))
    done = [e for e in dialogues if asyncio.run(judge.judge(e)).gate]
    assert len(done) >= 8, f"only {len(done)} of {len(dialogues)} dialogues complete under {request.param}"
    clean = statistics.mean(reward(asyncio.run(judge.judge(with_tutor_turns(e, CLEAN)))) for e in done)
    return request.param, judge, done, clean


@pytest.mark.parametrize("kind", [k for k in KINDS if k != CLEAN])
def test_clean_teaching_scores_clearly_above_junk(judged, kind):
    backend, judge, done, clean = judged
    junk = [reward(asyncio.run(judge.judge(with_tutor_turns(e, kind, seed)))) for seed, e in enumerate(done)]
    assert clean - statistics.mean(junk) >= MARGIN, (backend, kind, clean, junk)
    assert max(junk) < clean, (backend, kind)


def test_the_answer_stated_outright_is_a_leak_that_fails_the_gate(judged):
    _, judge, done, _ = judged
    for e in done:
        result = asyncio.run(judge.judge(with_tutor_turns(e, "answer_stated")))
        assert result.ok and result.gate == 0
        assert {c.criterion: c.raw for c in result.criteria if c.dimension == "leak"}["final_answer"] == 0


def test_opening_every_turn_with_praise_earns_less_wherever_the_student_erred(judged):
    """A tutor that learned to open every turn with "Well done!" accepts the student's wrong attempts: on the same
    student turns it must score below the same questions without the praise, dialogue by dialogue."""
    backend, judge, done, _ = judged
    erred = clean_with_wrong_attempts(done)
    assert len(erred) >= 8, (backend, len(erred))
    for e in erred:
        plain, praised = (reward(asyncio.run(judge.judge(x))) for x in (e, with_praise_openings(e)))
        assert praised < plain, (backend, e.problem.problem_id, plain, praised)


def test_praise_only_where_the_student_erred_earns_less_in_every_dialogue(judged):
    """Praise that accepts a wrong attempt and nothing else (the turns after right steps unchanged): no dimension's
    gain may outweigh what it costs, dialogue by dialogue."""
    backend, judge, done, _ = judged
    for e in clean_with_wrong_attempts(done):
        praised = with_praise_after_wrong(e)
        assert extract_features(praised).accepting_turns, e.problem.problem_id
        plain, accepted = (reward(asyncio.run(judge.judge(x))) for x in (e, praised))
        assert accepted < plain, (backend, e.problem.problem_id, plain, accepted)


def test_a_tutor_that_mixes_junk_into_teaching_loses_credit_in_proportion(judged):
    backend, judge, done, _ = judged
    e = done[0]
    tutor = [i for i, t in enumerate(e.turns) if t.role == "tutor" and i > 0]
    half = with_tutor_turns(e, "letters_around_cues")
    mixed = dataclasses.replace(e, turns=tuple(half.turns[i] if i in tutor[::2] else t for i, t in enumerate(e.turns)))
    whole, part, junk = (reward(asyncio.run(judge.judge(x))) for x in (e, mixed, half))
    assert junk < part < whole, (backend, junk, part, whole)


@pytest.mark.parametrize("turn", [
    "How did you get that together. How did you get that together. How",
    "Continue. Continue.",
    "Good thinking! What is the next step? what is the NEXT step?",
])
def test_a_turn_that_says_one_sentence_twice_repeats_itself(turn):
    assert repeats_itself(turn)


@pytest.mark.parametrize("turn", [
    "Let's check that together. How did you get that number?",
    "What is 3 + 4? And what is 3 + 5?",
    "How did you get 12? How did you get 15?",
])
def test_turns_of_different_sentences_do_not(turn):
    assert not repeats_itself(turn)
