"""The simulator statistics of eval-simulator against hand-computed values on small synthetic label sets."""

import math

import pytest

from pearl_verl.eval.simulator_stats import response_accuracy, simulator_markdown, simulator_summary

# Two dialogues, six labelled student replies (labels from the taxonomy):
#   d1: correct {feedback_uptake}, partial {feedback_uptake, uncertainty}, correct {}
#   d2: none {uncertainty}, correct {feedback_uptake}, correct {feedback_uptake}
D1 = [("correct", ["feedback_uptake"]), ("partial", ["feedback_uptake", "uncertainty"]), ("correct", [])]
D2 = [("none", ["uncertainty"]), ("correct", ["feedback_uptake"]), ("correct", ["feedback_uptake"])]


def row(key, turns, ability="medium", simulator="sim", ok=True):
    return {
        "id": key,
        "simulator": simulator,
        "tutor": "t",
        "ability": ability,
        "source": "test",
        "ok": ok,
        "turns": [{"attempt": a, "labels": labels} for a, labels in turns] if ok else [],
        "error": None if ok else "unparsable",
    }


@pytest.fixture
def report():
    rows = [row("1", D1, "low"), row("2", D2, "high"), row("3", [], ok=False)]
    return simulator_summary(rows, ["sim"])["sim"]


def test_counts_and_flagged(report):
    assert (report["dialogues"], report["annotated"], report["flagged"]) == (3, 2, 1)
    assert report["diversity"]["turns"] == 6


def test_attempt_distribution_and_entropy_by_hand(report):
    d = report["diversity"]
    # correct 4/6, partial 1/6, incorrect 0, none 1/6
    assert d["attempt_distribution"] == pytest.approx(
        {"correct": 4 / 6, "partial": 1 / 6, "incorrect": 0.0, "none": 1 / 6}
    )
    by_hand = -(4 / 6 * math.log(4 / 6) + 2 * (1 / 6) * math.log(1 / 6)) / math.log(4)
    assert d["attempt_entropy"] == pytest.approx(by_hand)
    assert d["attempt_entropy"] == pytest.approx(0.6258, abs=1e-4)


def test_label_coverage_frequencies_and_mean_by_hand(report):
    d = report["diversity"]
    assert (d["label_coverage"], d["taxonomy_size"]) == (2, 13)
    assert d["labels_at_least_1pct"] == 2
    assert d["label_frequencies"]["feedback_uptake"] == pytest.approx(4 / 6)
    assert d["label_frequencies"]["uncertainty"] == pytest.approx(2 / 6)
    assert d["label_frequencies"]["guessing"] == 0.0
    assert d["mean_labels"] == pytest.approx((1 + 2 + 0 + 1 + 1 + 1) / 6)


def test_unique_label_sets_and_label_set_entropy_by_hand(report):
    d = report["diversity"]
    # sets: {fu} x3, {fu, unc} x1, {} x1, {unc} x1 -> 4 distinct sets
    assert d["unique_label_sets"] == 4
    by_hand = -(3 / 6 * math.log2(3 / 6) + 3 * (1 / 6) * math.log2(1 / 6))
    assert d["label_set_entropy"] == pytest.approx(by_hand)
    assert d["label_set_entropy"] == pytest.approx(1.7925, abs=1e-4)


def test_transition_entropy_by_hand(report):
    # transitions: (c,p) (p,c) in d1, (n,c) (c,c) in d2. From c: p or c with 1/2 each -> 1 bit,
    # weighted by p(c) = 2/4; from p and n deterministic -> 0. H = 0.5 bit.
    assert report["diversity"]["transition_entropy"] == pytest.approx(0.5)


def test_transition_entropy_zero_when_every_move_is_determined():
    rows = [row("1", [("none", []), ("partial", []), ("correct", [])]), row("2", [("none", []), ("partial", [])])]
    assert simulator_summary(rows, ["sim"])["sim"]["diversity"]["transition_entropy"] == 0.0


def test_response_accuracy_counts_only_attempted_replies():
    acc = response_accuracy([row("1", D1, "low"), row("2", D2, "high")])
    # low: correct, partial, correct -> 2/3; high: none is not an attempt -> correct 2 of 2
    assert acc["low"].mean == pytest.approx(2 / 3) and acc["low"].n == 3
    assert acc["high"].mean == 1.0 and acc["high"].n == 2
    assert "medium" not in acc


def test_markdown_names_planned_labels_and_shows_the_numbers(report):
    from pearl_verl.eval.annotate import PLANNED_SOURCE

    text = simulator_markdown({"sim": report}, PLANNED_SOURCE)
    assert "PLANNED LABELS, NOT ANNOTATIONS" in text
    assert "| sim | 2/13 | 2 | 1.000 | 0.626 | 4 | 1.792 | 0.500 | 6 | 2 | 1 |" in text
    assert "annotations by" in simulator_markdown({"sim": report}, "llm:strong-model")
