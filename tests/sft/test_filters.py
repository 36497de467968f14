"""The SFT filters: answer leakage before a student attempt, the drop order, dedup, turn balancing."""

import functools
import json
import random

import pytest

from pearl_verl.data.location import data_dir
from pearl_verl.dialogue.answers import numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.dialogue.problem import Problem
from pearl_verl.sft.filters import (
    FilterConfig,
    balance_turns,
    deduplicate,
    dialogue_key,
    drop_reason,
    equals_answer,
    first_leak,
    reveals,
)
from pearl_verl.student.reading import reveals_answer, same_answer

MATH500 = data_dir() / "math500" / "test.jsonl"
PROBLEM = Problem("p1", "Tom has 3 bags with 4 apples each. How many apples?", "3 * 4 = 12", "12", "gsm8k")


@pytest.fixture
def make_episode(make_episode):
    """The shared factory (tests/conftest.py) on this module's problem."""
    return functools.partial(make_episode, problem=PROBLEM)


OPENING = (STUDENT, "Tom has 3 bags with 4 apples each. How many apples?")


def test_stating_the_answer_before_any_attempt_is_a_leak(make_episode):
    leaked = make_episode(turns=[OPENING, (TUTOR, "It is 12 apples."), (STUDENT, "ok")])
    assert first_leak(leaked, 1) == 1
    assert first_leak(leaked, 0) is None  # the filter is off


def test_the_answer_after_an_attempt_is_not_a_leak_and_the_opening_does_not_count(make_episode):
    after = make_episode(
        turns=[OPENING, (TUTOR, "What is 3 times 4?"), (STUDENT, "Is it 7?"), (TUTOR, "Not quite: 3 * 4 = 12.")],
        attempts=["incorrect", "incorrect"],
    )
    assert first_leak(after, 1) is None
    assert first_leak(after, 2) == 3  # only one reply attempt so far
    # The opening's misconception is not an attempt made in this dialogue.
    early = make_episode(turns=[OPENING, (TUTOR, "The answer is 12.")], attempts=["incorrect"])
    assert first_leak(early, 1) == 1


def test_no_trace_falls_back_to_whether_the_student_stated_an_answer(make_episode):
    dialogue = [OPENING, (TUTOR, "Try it"), (STUDENT, "I get 10"), (TUTOR, "Check: 3 * 4 = 12")]
    record = make_episode(turns=dialogue, trace=())
    assert first_leak(record, 1) is None


def test_answers_the_question_gives_are_exempt_and_latex_answers_are_caught(make_episode):
    given = Problem("p2", "Sam has 5 pens and 5 pencils. How many pens?", "He has 5 pens.", "5")
    assert first_leak(make_episode(turns=[(STUDENT, "help"), (TUTOR, "You have 5 pens")], problem=given), 1) is None
    frac = Problem("p3", "Write 28 divided by 6 in lowest terms.", "28/6 = \\frac{14}{3}", "\\frac{14}{3}", "math")
    for text in ["So it is \\frac{14}{3}.", "That gives 14/3.", "about 4.666666666"]:
        assert first_leak(make_episode(turns=[(STUDENT, "help"), (TUTOR, text)], problem=frac), 1) == 1, text
    halving_question = [(STUDENT, "help"), (TUTOR, "What is 28 divided by 2?")]
    assert first_leak(make_episode(turns=halving_question, problem=frac), 1) is None


def test_cached_answer_comparison_agrees_with_the_simulators_rule():
    rows = [json.loads(line) for line in MATH500.read_text().splitlines()]
    rng = random.Random(0)
    pairs = []
    for row in rng.sample(rows, 25):
        numbers = numbers_in(row["problem"] + " " + row["solution"])
        pairs += [(row["answer"], n) for n in rng.sample(numbers, min(3, len(numbers)))]
    pairs += [("\\frac{14}{3}", "14/3"), ("0.5", "1/2"), ("18", "18.0"), ("6+9i", "6"), ("\\pi", "3.14159265")]
    for answer, number in pairs:
        assert equals_answer(answer, number) == same_answer(answer, number), (answer, number)
    for text in ["The answer is 12.", "12.0 apples", "3 and 4", "It is \\frac{24}{2}"]:
        assert reveals(PROBLEM, text) == reveals_answer(PROBLEM, text), text


def _judge(ok=1, completed=1, score=0.8):
    dims = dict.fromkeys(("acc", "leak", "complete", "load", "guide", "meta", "adaptive", "emotion"), score)
    return {**dims, "judge_ok": ok, "completed": completed, "tutor_turns": 2, "judge_latency_s": 0.0}


GOOD = [OPENING, (TUTOR, "What is 3 times 4?"), (STUDENT, "12"), (TUTOR, "Yes! Well done.")]


@pytest.mark.parametrize(("episode_args", "judge", "tokens", "reason"), [
    ({"turns": GOOD, "end_reason": "tutor_error"}, None, None, "backend_failure"),
    ({"turns": GOOD, "end_reason": "turn_limit"}, None, None, "incomplete"),
    ({"turns": GOOD, "end_reason": "student_left"}, None, None, "incomplete"),
    ({"turns": GOOD[:2]}, None, None, "too_short"),
    ({"turns": [*GOOD[:3], (TUTOR, "  ")]}, None, None, "empty_tutor_turn"),
    ({"turns": [OPENING, (TUTOR, "It's 12."), (STUDENT, "ok"), (TUTOR, "Bye")]}, None, None, "answer_leak"),
    ({"turns": GOOD, "attempts": ["none", "correct"]}, _judge(ok=0), None, "judge_failed"),
    ({"turns": GOOD, "attempts": ["none", "correct"]}, _judge(completed=0), None, "judge_incomplete"),
    ({"turns": GOOD, "attempts": ["none", "correct"]}, _judge(score=0.4), None, "judge_low_score"),
    ({"turns": GOOD, "attempts": ["none", "correct"]}, _judge(), 5000, "too_long"),
    ({"turns": GOOD, "attempts": ["none", "correct"]}, _judge(), 100, None),
    ({"turns": GOOD, "attempts": ["none", "correct"], "end_reason": "student_concluded"}, None, None, None),
])
def test_drop_reasons_in_order(make_episode, episode_args, judge, tokens, reason):
    config = FilterConfig(judge_min_score=0.5)
    assert drop_reason(make_episode(**episode_args), judge, config, tokens, 4096 if tokens else None) == reason


def test_dedup_folds_case_and_spaces_and_keeps_the_first(make_episode):
    a = make_episode(turns=GOOD, attempts=["none", "correct"])
    b = make_episode(turns=[(r, t.upper() + "  ") for r, t in GOOD], attempts=["none", "correct"])
    c = make_episode(turns=[*GOOD[:3], (TUTOR, "Correct, nice work.")], attempts=["none", "correct"])
    assert dialogue_key(a) == dialogue_key(b) != dialogue_key(c)
    assert deduplicate(["b", "a", "c"], {"a": a, "b": b, "c": c}) == (["b", "c"], ["a"])


def test_turn_balance_caps_each_length_stably():
    turns = {f"d{i}": 3 for i in range(60)} | {f"e{i}": 5 for i in range(10)} | {f"f{i}": 7 for i in range(5)}
    ids = list(turns)
    kept, dropped = balance_turns(ids, turns, 1.5)
    cap = -(-1.5 * 75 // 3)  # ceil(1.5 * mean of 25)
    assert sum(turns[k] == 3 for k in kept) == cap and len(dropped) == 60 - cap
    assert [k for k in ids if k in kept] == kept  # order kept
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    assert set(balance_turns(shuffled, turns, 1.5)[0]) == set(kept)  # independent of generation order
    assert balance_turns(ids, turns, 0) == (ids, [])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"min_tutor_turns": 0}, "min_tutor_turns=0: a whole number from 1 to"),
    ({"attempts_before_answer": -1}, r"attempts_before_answer=-1: a whole number from 0 to 1,000,000,000 \(0: no leak filter\)"),
    ({"judge_min_score": 1.5}, r"judge_min_score=1.5: a finite number from 0 to 1 \(judge scores are in \[0, 1\]\)"),
    ({"turn_balance": 0.5}, "turn_balance=0.5 must be 0"),
    ({"turn_balance": float("nan")}, r"turn_balance=nan: a finite number from 0 to"),  # not int(nan) later
])
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FilterConfig(**kwargs)
