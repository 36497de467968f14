"""Per-problem decompositions: rule extraction, DAG edges from the rules, the stored format and its errors."""

import pytest

from pearl_verl.dialogue.problem import Problem
from pearl_verl.knowledge.curriculum import load_curriculum
from pearl_verl.knowledge.decomposition import (
    DecompositionError,
    build_decomposition,
    decomposition_from_dict,
    prerequisite_edges,
    step_result,
)
from pearl_verl.knowledge.extract import DEFAULT_UNIT, rule_decomposition

CURRICULUM = load_curriculum()
EGGS = Problem(
    "gsm8k-test-0000",
    "Janet's ducks lay 16 eggs per day. She eats three and bakes with four. She sells the remainder for $2 per egg. "
    "How much does she make every day?",
    "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day at the farmer's market.",
    "18",
    "gsm8k",
)


def test_rule_decomposition_of_a_gsm8k_problem():
    d = rule_decomposition(EGGS, CURRICULUM)
    assert d.source == "rules" and d.extractor == "rules-v1"
    assert [s.result for s in d.steps] == ["9", "18"]
    assert "subtraction" in d.steps[0].units and "multiplication" in d.steps[1].units
    assert {"subtraction", "multiplication", "money", "word_problems"} <= set(d.units)
    assert list(d.units) == [u for u in CURRICULUM.ids if u in d.units]  # curriculum order
    assert set(d.steps[0].units) <= set(d.units)


def test_edges_follow_the_rules_through_absent_units_and_are_reduced():
    # addition -> multiplication -> {fractions via division, percent}; with only these three units
    # the closure gives addition->percent, multiplication->percent and addition->multiplication; the
    # reduction drops addition->percent (implied through multiplication).
    assert prerequisite_edges(("addition", "multiplication", "percent"), CURRICULUM) == (
        ("addition", "multiplication"),
        ("multiplication", "percent"),
    )
    assert prerequisite_edges(("addition", "percent"), CURRICULUM) == (("addition", "percent"),)
    assert prerequisite_edges(("angles", "money"), CURRICULUM) == ()


def test_step_results_and_default_unit():
    assert step_result("He makes 80,000*1.5=$120,000 total") == "120000"
    assert step_result("x = 3/4 of them") == "3/4"
    assert step_result("No equals sign here") is None
    bare = Problem("p", "Zork?", "Blorp.", "1")
    assert rule_decomposition(bare, CURRICULUM).units == (DEFAULT_UNIT,)


def test_stored_form_round_trips():
    d = rule_decomposition(EGGS, CURRICULUM)
    assert decomposition_from_dict(d.to_dict(), CURRICULUM) == d


def test_cycle_in_a_stored_graph_is_an_error_naming_it():
    data = rule_decomposition(EGGS, CURRICULUM).to_dict()
    data["edges"] = [*data["edges"], ["money", "subtraction"]]  # subtraction -> ... -> money -> subtraction
    with pytest.raises(DecompositionError, match="prerequisite cycle: .*money") as info:
        decomposition_from_dict(data, CURRICULUM)
    assert info.value.reason == "cycle"


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda d: d.update(units=[*d["units"], "alchemy"]), "unknown_unit"),
        (lambda d: d.update(edges=[["addition", "alchemy"]]), "unknown_unit"),
        (lambda d: d.pop("steps"), "malformed"),
        (lambda d: d.update(schema="v0"), "malformed"),
        (lambda d: d.update(source="oracle"), "malformed"),
        (lambda d: d.update(edges=[["addition"]]), "malformed"),
    ],
)
def test_bad_stored_decompositions_have_a_reason(edit, reason):
    data = rule_decomposition(EGGS, CURRICULUM).to_dict()
    edit(data)
    with pytest.raises(DecompositionError) as info:
        decomposition_from_dict(data, CURRICULUM)
    assert info.value.reason == reason


def test_build_checks_step_count_and_units():
    with pytest.raises(DecompositionError, match="1 step unit lists for 2 reference steps") as info:
        build_decomposition(EGGS, CURRICULUM, [["addition"]], [], "llm", "x")
    assert info.value.reason == "mismatch"
    with pytest.raises(DecompositionError, match="alchemy"):
        build_decomposition(EGGS, CURRICULUM, [["alchemy"], []], [], "llm", "x")
