"""Rule-based readers (tutor moves, stated answers), the cognitive model's values, realiser and cheap check."""

import random

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.extract import rule_decomposition
from pearl_verl.student.consistency import check_message, clean_message
from pearl_verl.student.offline_realiser import minimal_message, opening_text, realise
from pearl_verl.student.planner import Mind, Plan, cognitive_draw, format_number, to_number, wrong_value
from pearl_verl.student.reading import TutorMove, read_tutor, same_answer, stated_answer, states_correct_answer
from pearl_verl.tutor.scripted import hide_results

CURRICULUM = load_curriculum()
EGGS = Problem(
    "eggs",
    "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells the rest for $2 each. "
    "How much does she make?",
    "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.",
    "18",
)
DEC = rule_decomposition(EGGS, CURRICULUM)


def test_reading_scripted_tutor_moves():
    hint = read_tutor(
        f"Good thinking. Consider this step: {hide_results(DEC.steps[1].text)} Can you work that part out?",
        EGGS,
        DEC,
        CURRICULUM,
    )
    assert hint.step == 1 and hint.asks and hint.praises and not hint.flags_error and not hint.reveals_answer
    assert "multiplication" in hint.units
    check = read_tutor("Let's check that together. How did you get 12?", EGGS, DEC, CURRICULUM)
    assert check.flags_error and not check.praises and check.step is None
    leak = read_tutor(f"The answer is 18. Here is the full solution: {EGGS.reference_solution}", EGGS, DEC, CURRICULUM)
    assert leak.reveals_answer and set(leak.units) >= set(DEC.steps[0].units) | set(DEC.steps[1].units)
    assert read_tutor("Hmm.", EGGS, DEC, CURRICULUM) == TutorMove()


def test_stated_answers():
    assert stated_answer("I think 16 - 3 - 4 = 9, so 9 * 2 = 18") == "18"
    assert stated_answer("So the answer is \\frac{14}{3}. I think.") == "\\frac{14}{3}"
    assert stated_answer("My answer: $\\boxed{p - q}$ ok") == "p - q"
    assert stated_answer("I don't know") is None
    assert states_correct_answer(EGGS, "She makes $18.00 a day") and not states_correct_answer(EGGS, "18 eggs, so 36?")
    assert (
        same_answer("p - q", "p - q")
        and same_answer("x^2+7x+10", "x^2 + 7x + 10")
        and not same_answer("p - q", "q - p")
    )
    math = Problem("m", "q", "s", "\\left( 3, \\frac{\\pi}{2} \\right)")
    assert states_correct_answer(math, "So the answer is \\left( 3, \\frac{\\pi}{2} \\right).")


def test_wrong_values_are_never_right():
    rng = random.Random(0)
    for systematic in (True, False):
        for _ in range(50):
            value, is_method = wrong_value(DEC, EGGS, 1, rng, systematic)
            assert to_number(value) not in (18.0,) and not same_answer("18", value)
            assert is_method in (True, False) and (systematic or not is_method)
    assert {wrong_value(DEC, EGGS, 0, random.Random(s), True)[0] for s in range(30)} & {
        "23",
        "48",
        "13",
    }  # 16+3*, 16*3, 16-3
    assert (
        format_number(2.5) == "2.5"
        and format_number(4.0) == "4"
        and to_number("3/4") == 0.75
        and to_number("x") is None
    )


def test_cognitive_draw_follows_mastery():
    def share_correct(level):
        rng = random.Random(1)
        mind = Mind(mastery=dict.fromkeys(DEC.units, level))
        draws = [
            cognitive_draw(mind, TutorMove(), CognitiveProfile(2, 2, 2, 2, 2), DEC, EGGS, rng) for _ in range(2000)
        ]
        assert all(d.step == 0 for d in draws)  # the next undone step
        return sum(d.attempt == "correct" for d in draws) / len(draws)

    assert share_correct(0.1) < share_correct(0.5) < share_correct(0.95)
    told = cognitive_draw(
        Mind(mastery=dict.fromkeys(DEC.units, 0.0)),
        TutorMove(reveals_answer=True),
        CognitiveProfile(3, 3, 3, 3, 3),
        DEC,
        EGGS,
        random.Random(0),
    )
    assert told.attempt == "correct" and told.final and told.value == "18"


@pytest.mark.parametrize(
    "plan, text, issue",
    [
        (Plan("none", ()), "", "empty"),
        (Plan("none", ()), "x" * 700, "700 characters"),
        (Plan("none", ()), "Tutor: let's begin", "breaks the student role"),
        (Plan("none", ()), "As an AI I cannot", "breaks the student role"),
        (Plan("correct", (), 1, True, "18"), "I got 17.", "must state the final answer 18"),
        (Plan("partial", (), 1, True), "So 9 * 2 = 18", "must not state the correct final answer"),
        (Plan("incorrect", (), 1, True, "20"), "I think it's 16.", "wrong value 20"),
        (Plan("correct", (), 0, False, "9"), "I think 16 - 3 = 13.", "step result 9"),
        (Plan("none", ("help_seeking",)), "I'm lost.", "ask the tutor a question"),
    ],
)
def test_cheap_check_finds_each_inconsistency(plan, text, issue):
    assert any(issue in found for found in check_message(text, plan, EGGS, 600))


def test_templates_pass_the_check_by_construction():
    rng = random.Random(3)
    labels = (
        "misconception",
        "uncertainty",
        "help_seeking",
        "persistence",
        "feedback_uptake",
        "explaining_reasoning",
        "metacognitive_monitoring",
        "self_correction",
        "answer_seeking",
        "off_topic",
        "frustration",
        "positive_engagement",
    )
    plans = [
        Plan("correct", (), 0, False, "9"),
        Plan("correct", (), 1, True, "18"),
        Plan("partial", (), 1, True),
        Plan("incorrect", (), 1, True, "20", True),
        Plan("incorrect", (), 0, False, "13"),
        Plan("none", ()),
        Plan("none", ("frustration",), leave=True),
        Plan("none", ("positive_engagement",), conclude=True),
    ]
    for plan in plans:
        for _ in range(30):
            chosen = (
                tuple(label for label in labels if rng.random() < 0.3)
                if not (plan.leave or plan.conclude)
                else plan.labels
            )
            if plan.attempt == "incorrect" and plan.misconception:
                chosen = ("misconception", *chosen)
            full = Plan(
                plan.attempt, chosen, plan.step, plan.final, plan.value, plan.misconception, plan.leave, plan.conclude
            )
            text = realise(full, EGGS, DEC, rng)
            assert check_message(text, full, EGGS, 600) == [], (full, text)
            assert check_message(minimal_message(full, EGGS), full, EGGS, 600) == []


def test_opening_and_cleaning():
    condition = StudentCondition(CognitiveProfile(1, 2, 3, 1, 2), seed=9)
    text, attempt, labels = opening_text(EGGS, condition)
    assert text == opening_text(EGGS, condition)[0] and EGGS.question in text and attempt == "none"
    wrong = opening_text(EGGS, StudentCondition(misconception="9 + 2 = 11"))
    assert wrong[1:] == ("incorrect", ("misconception",)) and "9 + 2 = 11" in wrong[0]
    assert clean_message('  Student: "I think 9?"  ') == "I think 9?"
