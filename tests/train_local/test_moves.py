"""Teaching moves a teacher reads: each rate counts what a tutor turn does against the turns it applies to."""

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.train_local.moves import MOVES, move_rates, refers, turn_moves

PROBLEM = Problem("p", "A mechanic repairs 6 truck tires at $60 each. How much does he earn?", "6 * 60 = 360", "360")


def dialogue(make_episode, *turns, attempts):
    return make_episode(["Here is my work: 6 * 60 = 300.", *turns], problem=PROBLEM, attempts=attempts)


@pytest.fixture
def teacher(make_episode):
    """Points to the mistake after the wrong 300, confirms the right 360, and asks about the student's truck tires."""
    return dialogue(make_episode, "How did you get 300 for the truck tires?", "6 * 60 is 360.",
                    "Yes, that's right. What does your 360 stand for?", "The money he earns.", attempts=["incorrect",
                                                                                                 "correct", "none"])


@pytest.fixture
def stock(make_episode):
    """Praises the wrong 300, then questions the right 360: lines that fit any problem."""
    return dialogue(make_episode, "Well done! What is the next step?", "6 * 60 is 360.",
                    "Let's check that together. Can you look again?", "ok", attempts=["incorrect", "correct", "none"])


def test_a_teacher_points_after_the_wrong_attempt_and_not_after_the_right_one(teacher):
    rates = move_rates([teacher])
    assert set(rates) == set(MOVES)
    assert rates["points_after_wrong"] == 1.0 and rates["points_after_right"] == 0.0
    assert rates["accepts_wrong"] == 0.0 and rates["refers"] == 1.0 and rates["asks_about_work"] == 1.0
    assert rates["states_answer"] == 0.0 and rates["solved"] == 1.0 and rates["well_formed"] == 1.0


def test_stock_lines_praise_the_wrong_attempt_question_the_right_one_and_refer_to_nothing(stock):
    rates = move_rates([stock], stock=["Well done!  What is the next step?", "Let's check that together. Can you look again?"])
    assert rates["accepts_wrong"] == 1.0 and rates["points_after_wrong"] == 0.0
    assert rates["points_after_right"] == 1.0
    assert rates["refers"] == 0.0 and rates["not_stock"] == 0.0


def test_stating_the_answer_first_counts_and_a_rate_without_turns_to_count_is_none(make_episode):
    leak = dialogue(make_episode, "He earns 360 dollars.", "ok", attempts=["none", "none"])
    rates = move_rates([leak])
    assert rates["states_answer"] == 1.0
    assert rates["points_after_wrong"] is None and rates["points_after_right"] is None


def test_refers_to_numbers_and_uncommon_words_of_the_problem_or_the_students_message():
    assert refers("What did you get for the tires?", PROBLEM.question, "")
    assert refers("Where does 300 come from?", PROBLEM.question, "I got 300")
    assert not refers("What is the next number you need?", PROBLEM.question, "I got 300")  # everyday words only


def test_letter_soup_makes_no_move(make_episode):
    soup = dialogue(make_episode, "xqzv plmk tires check 300?", "hm", attempts=["incorrect", "none"])
    moves = turn_moves(soup)
    assert [m.well_formed for m in moves] == [False]
    assert not (moves[0].refers or moves[0].points or moves[0].asks_about_work)
