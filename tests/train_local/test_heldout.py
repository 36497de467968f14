"""Held-out evaluation records: paired before -> after summary, seed spread, observables, files."""

import math

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.dims import DIMENSIONS
from pearl_verl.train_local.heldout import (
    HeldOut,
    append_heldout,
    observables,
    paired,
    read_heldout,
    summary,
    write_heldout_markdown,
)

PROBLEM = Problem("p", "Tom has 2 apples and buys 3 more. How many apples does he have?", "2 + 3 = 5", "5")
CONDITION = StudentCondition(CognitiveProfile())


def _episode(make_episode, *tutor_then_student):
    """The student's opening, then tutor and student in turn; no trace: the observables read the texts alone."""
    return make_episode(["Can you help me?", *tutor_then_student], problem=PROBLEM, condition=CONDITION, trace=())


def _info(score, ok=1):
    return {**{d: score for d in DIMENSIONS}, "judge_ok": ok}


@pytest.fixture
def leaking(make_episode):
    return _episode(make_episode, "The answer is 5. You were careless.", "ok, 5")


@pytest.fixture
def socratic(make_episode):
    return _episode(make_episode, "What do you know so far?", "I think it is 5", "Well done!")


def test_observables_read_what_the_tutor_did(make_episode, leaking, socratic):
    assert observables(leaking) == {"well_formed": 1.0, "asks_about_work": 0.0, "rechecks": 0.0, "praises": 0.0,
                                    "praises_wrong": 0.0, "gives_answer": 1.0, "blames": 1.0,
                                    "tutor_ends_after_solution": 1.0, "solved": 1.0}
    observed = observables(socratic)
    assert observed["asks_about_work"] == 0.5 and observed["praises"] == 0.5 and observed["gives_answer"] == 0.0
    assert observables(_episode(make_episode, "How did you get 7? Check it.", "7", "Look again."))["rechecks"] == 1.0
    assert observed["praises_wrong"] == 0.0  # "Well done!" answered the right answer
    praised = observables(_episode(make_episode, "What do you know so far?", "I think it is 7", "Well done! Next step?"))
    assert praised["praises_wrong"] == 1.0 and praised["praises"] == 0.5
    rechecked = observables(_episode(make_episode, "What do you know?", "I think it is 7", "Well done! Check that number?"))
    assert rechecked["praises_wrong"] == 0.0 and rechecked["praises"] == 0.5


@pytest.mark.parametrize("junk", ["xqzv check plmk that?", "Let's check that together. How did you",
                                  "Let's che\ufffdk that together?"])
def test_moves_inside_turns_that_are_not_sentences_of_words_are_not_counted(make_episode, junk):
    observed = observables(_episode(make_episode, junk, "I think it is 7", "Well done! How did you get 7?"))
    assert observed["well_formed"] == 0.5
    assert observed["rechecks"] == 0.5 and observed["asks_about_work"] == 0.5 and observed["praises"] == 0.5


def test_summary_pairs_dialogues_and_sets_the_gain_against_the_seed_spread(leaking, socratic):
    before = HeldOut.of(0, 2, [leaking] * 4, [_info(0.2), _info(0.4), _info(0.3), _info(0.9, ok=0)])
    after = HeldOut.of(10, 2, [socratic] * 4, [_info(0.6), _info(0.7), _info(0.8), _info(0.8)])
    assert before.seed_means == pytest.approx([0.3, 0.3]) and before.rewards[3] is None
    metrics = after.metrics()
    assert metrics["eval/reward/mean"] == pytest.approx(0.725) and metrics["eval/dialogues"] == 4
    assert metrics["eval/obs/asks_about_work"] == 0.5 and metrics["eval/obs/well_formed"] == 1.0
    text = summary(before, after)
    # the failed judgement drops its pair: gains 0.4, 0.3, 0.5 -> mean 0.4, t(2) interval 0.4 +- 4.303 * 0.1 / sqrt(3)
    half = 4.302653 * 0.1 / math.sqrt(3)
    assert "change +0.400" in text and f"[{0.4 - half:+.3f}, {0.4 + half:+.3f}]" in text
    assert "(3 dialogues" in text and "spread over its 2 eval seeds: 0.000" in text
    assert "acc +0.42" in text  # 0.725 - 0.3 per dimension, failed judgements left out on each side
    assert "state the final answer before the student has: 100% -> 0%" in text


def test_evaluations_round_trip_and_dialogues_file(tmp_path, leaking, socratic):
    before = HeldOut.of(0, 1, [leaking], [_info(0.2)])
    after = HeldOut.of(5, 1, [socratic], [_info(0.7)])
    path = tmp_path / "heldout.jsonl"
    append_heldout(path, before, "initial")
    append_heldout(path, after, "train")
    (phase0, read0), (phase1, read1) = read_heldout(path)
    assert (phase0, phase1) == ("initial", "train") and read1.rewards == [0.7] and read0.episodes == [leaking]
    text = write_heldout_markdown(tmp_path / "d.md", read0, read1).read_text()
    assert "### step 0 (reward 0.200" in text and "### step 5 (reward 0.700" in text
    assert "The answer is 5." in text and "What do you know so far?" in text


def test_two_validations_pair_by_slot_when_one_lost_a_dialogue(tmp_path, leaking, socratic):
    # verl's validation drops a session whose agent loop failed: the others still pair with their own slot
    slots = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]]
    before = HeldOut.of(0, 1, [leaking] * 4, [_info(0.1), _info(0.2), _info(0.3), _info(0.4)], slots=slots)
    after = HeldOut.of(5, 1, [socratic] * 3, [_info(0.5), _info(0.9), _info(0.8)], slots=[slots[0], *slots[2:]])
    assert paired(before, after) == [(0, 0), (2, 1), (3, 2)]
    assert "change +0.467" in summary(before, after) and "(3 dialogues" in summary(before, after)
    path = tmp_path / "heldout.jsonl"
    append_heldout(path, after, "train")
    assert read_heldout(path)[0][1].slots == after.slots
    text = write_heldout_markdown(tmp_path / "d.md", before, after).read_text()
    assert text.count("### step 0 (reward 0.100") == 1 and "### step 0 (reward 0.200" not in text
