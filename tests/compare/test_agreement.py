"""Cohen's and Fleiss' kappa against textbook examples and hand computations."""

import pytest

from pearl_verl.compare.agreement import cohen_kappa, fleiss_kappa


def test_cohen_textbook_two_by_two():
    # 50 items: both yes 20, A yes / B no 5, A no / B yes 10, both no 15 (the standard textbook table).
    # p_o = 35/50 = 0.7; A says yes 25/50, B 30/50: p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4
    first = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    second = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(first, second) == pytest.approx(0.4)


def test_cohen_three_classes_by_hand():
    # win/tie/loss on 6 pairs; agree on 4 -> p_o = 4/6
    # rater 1: a 3, tie 1, b 2; rater 2: a 3, tie 2, b 1 -> p_e = (3*3 + 1*2 + 2*1) / 36 = 13/36
    first = ["a", "a", "a", "tie", "b", "b"]
    second = ["a", "a", "tie", "tie", "b", "a"]
    p_o, p_e = 4 / 6, 13 / 36
    assert cohen_kappa(first, second) == pytest.approx((p_o - p_e) / (1 - p_e)) == pytest.approx(11 / 23)
    assert cohen_kappa(first, first) == pytest.approx(1.0)
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)


def test_cohen_undefined_and_errors():
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # chance agreement is 1: kappa is 0/0
    with pytest.raises(ValueError, match="aligned labels; got 2 and 1"):
        cohen_kappa(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="at least one item"):
        cohen_kappa([], [])


def test_fleiss_textbook_example():
    # Fleiss (1971) style example: 10 subjects, 14 raters, 5 categories; P_bar = 0.378, P_e = 0.213, kappa = 0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    items = [{str(k): c for k, c in enumerate(row)} for row in table]
    assert fleiss_kappa(items) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_by_hand_and_edge_cases():
    # 3 annotators on 2 pairs: {a: 3} and {a: 2, b: 1}. P_1 = 1, P_2 = (4 + 1 - 3) / 6 = 1/3, P_bar = 2/3;
    # pooled shares a 5/6, b 1/6 -> P_e = 26/36; kappa = (2/3 - 26/36) / (1 - 26/36) = -0.2
    assert fleiss_kappa([{"a": 3}, {"a": 2, "b": 1}]) == pytest.approx(-0.2)
    assert fleiss_kappa([{"a": 3}, {"b": 2}, {"tie": 1}]) == pytest.approx(1.0)  # the single rating is left out
    assert fleiss_kappa([{"a": 2}, {"a": 3}]) is None
    with pytest.raises(ValueError, match="two or more annotators"):
        fleiss_kappa([{"a": 1}])
