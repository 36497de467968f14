"""Answer extraction and math-verify equivalence, including from worker threads."""

import threading

import pytest

from pearl_verl.dialogue.answers import (
    answers_match,
    gsm8k_final_answer,
    gsm8k_rationale,
    last_boxed,
    mentions_answer,
    numbers_in,
)


@pytest.mark.parametrize(
    ("gold", "candidate", "same"),
    [
        ("18", "18.0", True),
        ("18", "$18", True),
        ("\\frac{1}{2}", "0.5", True),
        ("\\frac{1}{2}", "1/2", True),
        ("1000", "1,000", True),
        ("18", "19", False),
        ("18", "no number here", False),
        ("p - q", "p-q", True),
        ("x^2+7x+10", "x^2 + 7x + 10", True),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)", True),
        ("x^2+7x+10", "x^2 + 7x + 11", False),
    ],
)
def test_answers_match(gold, candidate, same):
    assert answers_match(gold, candidate) is same


def test_numbers_and_mentions():
    assert numbers_in("She paid $1,250.50 for 3/4 of it, then -2 more") == ["1250.50", "3/4", "-2"]
    assert mentions_answer("So the total is 72 cookies.", "72")
    assert not mentions_answer("What do you get for 8 times 9? Try it.", "72")
    assert not mentions_answer("step2 and x3 are labels", "2")


def test_gsm8k_fields():
    field = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 1,024"
    assert gsm8k_final_answer(field) == "1024"
    assert gsm8k_rationale(field) == "Natalia sold 48/2 = 24 clips in May."
    with pytest.raises(ValueError, match="no '#### <final answer>' line"):
        gsm8k_final_answer("no marker")


def test_last_boxed():
    assert last_boxed("so \\boxed{\\frac{1}{2}} and finally \\boxed{\\dfrac{3}{4}}") == "\\dfrac{3}{4}"
    assert last_boxed("\\fbox{7}") == "7"
    assert last_boxed("no box") is None and last_boxed("\\boxed{unclosed") is None


def test_works_off_the_main_thread():
    results = []
    thread = threading.Thread(target=lambda: results.append(answers_match("\\frac{3}{6}", "0.5")))
    thread.start()
    thread.join()
    assert results == [True]
