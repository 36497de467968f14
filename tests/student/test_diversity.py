"""Diversity statistics against hand-computed values (and the paper's own attempt-entropy figure)."""

import math

import pytest

from pearl_verl.student.diversity import (
    LabelledTurn,
    attempt_distribution,
    attempt_entropy,
    diversity_report,
    format_report,
    label_coverage,
    label_frequencies,
    label_set_entropy,
    labels_at_least,
    mean_labels_per_turn,
    transition_entropy,
    unique_label_sets,
)

T1 = LabelledTurn("correct", frozenset({"a"}))
T2 = LabelledTurn("correct", frozenset({"a", "b"}))
T3 = LabelledTurn("none")
T4 = LabelledTurn("incorrect", frozenset({"b"}))
TURNS = [T1, T2, T3, T4]
TAXONOMY = ("a", "b", "c")


def test_counts_and_frequencies():
    assert attempt_distribution(TURNS) == {"correct": 0.5, "partial": 0.0, "incorrect": 0.25, "none": 0.25}
    assert label_frequencies(TURNS, TAXONOMY) == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert label_coverage(TURNS, TAXONOMY) == 2
    assert labels_at_least(TURNS, 0.01, TAXONOMY) == 2 and labels_at_least(TURNS, 0.6, TAXONOMY) == 0
    assert mean_labels_per_turn(TURNS) == 1.0  # (1 + 2 + 0 + 1) / 4
    assert unique_label_sets(TURNS) == 4  # {a}, {a,b}, {}, {b}: the empty set counts


def test_entropies_by_hand():
    # attempts 1/2, 1/4, 1/4 -> 1.5 bits; normalised by log2(4) = 2 bits -> 0.75
    assert attempt_entropy(TURNS) == pytest.approx(0.75)
    # four distinct label sets, one turn each -> uniform over 4 -> 2 bits
    assert label_set_entropy(TURNS) == pytest.approx(2.0)
    assert label_set_entropy([T1, T1]) == 0.0
    # transitions: correct->correct, correct->none (from the first dialogue), incorrect->correct
    # H = 1/3 * -log2(1/2) + 1/3 * -log2(1/2) + 1/3 * -log2(1) = 2/3 bit
    assert transition_entropy([[T1, T2, T3], [T4, T1]]) == pytest.approx(2 / 3)
    # as label sets every source appears once and determines its successor -> 0 bits
    assert transition_entropy([[T1, T2, T3], [T4, T1]], state="label_set") == 0.0


def test_attempt_entropy_reproduces_the_paper():
    # The paper's Tables 5 and 7: ours 65.7/25.3/4.5/4.5 % -> 0.651; MathDial 72.5/21.2/3.2/3.1 -> 0.562;
    # SocraticLM 74.1/19.6/2.2/4.1 -> 0.545 (the paper's percentages are rounded, hence the tolerance)
    socratic = [
        LabelledTurn(a)
        for a, n in (("correct", 741), ("partial", 196), ("incorrect", 22), ("none", 41))
        for _ in range(n)
    ]
    ours = [
        LabelledTurn(a)
        for a, n in (("correct", 657), ("partial", 253), ("incorrect", 45), ("none", 45))
        for _ in range(n)
    ]
    mathdial = [
        LabelledTurn(a)
        for a, n in (("correct", 725), ("partial", 212), ("incorrect", 32), ("none", 31))
        for _ in range(n)
    ]
    assert attempt_entropy(ours) == pytest.approx(0.651, abs=1e-3)
    assert attempt_entropy(mathdial) == pytest.approx(0.562, abs=1e-3)
    assert attempt_entropy(socratic) == pytest.approx(0.545, abs=1e-3)
    assert attempt_entropy([LabelledTurn(a) for a in ("correct", "partial", "incorrect", "none")]) == pytest.approx(1.0)


def test_report_bundles_everything():
    report = diversity_report([[T1, T2, T3], [T4]], TAXONOMY)
    assert report.turns == 4 and report.dialogues == 2 and report.label_coverage == 2 and report.taxonomy_size == 3
    assert report.transition_entropy == pytest.approx(-(0.5 * math.log2(0.5)) * 2)  # two transitions from "correct"
    assert "label coverage 2/3" in format_report(report)
    assert diversity_report([[T1]], TAXONOMY).transition_entropy is None


def test_invalid_inputs():
    with pytest.raises(ValueError, match="at least one labelled turn"):
        attempt_entropy([])
    with pytest.raises(ValueError, match="attempt='maybe'"):
        LabelledTurn("maybe")
    with pytest.raises(ValueError, match="two or more"):
        transition_entropy([[T1]])
    with pytest.raises(ValueError, match="state="):
        transition_entropy([[T1, T2]], state="mood")
