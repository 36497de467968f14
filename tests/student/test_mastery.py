"""Mastery: scale, seeded initial state, the update rule by hand, and the prerequisite invariant as a property."""

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.knowledge.curriculum import CURRICULUM_SCHEMA, curriculum_from_dict, load_curriculum
from pearl_verl.student.mastery import (
    initial_mastery,
    learning_rate,
    mastery_band,
    project,
    sample_mastery,
    update_mastery,
    violations,
)

CURRICULUM = load_curriculum()
CHAIN = nx.DiGraph([("addition", "multiplication"), ("multiplication", "percent")])
LOW, HIGH = CognitiveProfile(1, 1, 1, 1, 1), CognitiveProfile(3, 3, 3, 3, 3)


def test_bands():
    assert [mastery_band(v) for v in (0.0, 0.39, 0.4, 0.69, 0.7, 1.0)] == [
        "not yet",
        "not yet",
        "partial",
        "partial",
        "mastered",
        "mastered",
    ]


def test_sampling_is_seeded_and_follows_ability():
    units = tuple(CURRICULUM.ids)
    low = sample_mastery(units, CURRICULUM, LOW, "k")
    assert low == sample_mastery(units, CURRICULUM, LOW, "k") and low != sample_mastery(units, CURRICULUM, LOW, "k2")
    high = sample_mastery(units, CURRICULUM, HIGH, "k")
    # same noise, mean 0.20 vs 0.85: every unit is 0.65 higher unless clipped
    assert all(high[u] > low[u] for u in units)
    assert sum(high.values()) / len(units) - sum(low.values()) / len(units) > 0.5


def test_initial_state_is_shared_by_a_condition_and_respects_prerequisites():
    condition = StudentCondition(HIGH, seed=7)
    m0 = initial_mastery(CHAIN, CURRICULUM, condition, "7|p")
    assert m0 == initial_mastery(CHAIN, CURRICULUM, condition, "7|p") and not violations(CHAIN, m0)
    assert m0["percent"] <= m0["multiplication"] <= m0["addition"]


def test_explicit_mastery_is_kept_and_sampled_units_adapt():
    condition = StudentCondition(LOW, mastery={"percent": 0.9}, seed=1)
    m0 = initial_mastery(CHAIN, CURRICULUM, condition, "k")
    assert m0["percent"] == 0.9 and m0["multiplication"] >= 0.9 and m0["addition"] >= 0.9  # prerequisites lifted
    low_base = initial_mastery(CHAIN, CURRICULUM, StudentCondition(HIGH, mastery={"addition": 0.1}), "k")
    assert low_base["addition"] == 0.1 and low_base["percent"] <= 0.1  # successors lowered
    unused = initial_mastery(CHAIN, CURRICULUM, StudentCondition(HIGH, mastery={"angles": 0.5}), "k")
    assert "angles" not in unused  # a curriculum unit this problem does not use is ignored


def test_explicit_mastery_errors():
    with pytest.raises(ValueError, match=r"unknown unit\(s\) \['telepathy'\]"):
        initial_mastery(CHAIN, CURRICULUM, StudentCondition(mastery={"telepathy": 0.5}), "k")
    with pytest.raises(ValueError, match=r"must be numbers in \[0, 1\]"):
        initial_mastery(CHAIN, CURRICULUM, StudentCondition(mastery={"addition": 1.5}), "k")
    bad = StudentCondition(mastery={"addition": 0.2, "percent": 0.8})
    with pytest.raises(ValueError, match="breaks the prerequisite order .*strict_prerequisites=False"):
        initial_mastery(CHAIN, CURRICULUM, bad, "k")
    kept = initial_mastery(CHAIN, CURRICULUM, bad, "k", strict=False)
    assert kept["addition"] == 0.2 and kept["percent"] == 0.8  # "unless stated"
    after = update_mastery(CHAIN, kept, {"percent": 1.0}, 0.3)
    assert after["percent"] == 0.8  # never raised further above its prerequisite, never lowered


def test_update_rule_by_hand():
    m = {"addition": 0.8, "multiplication": 0.5, "percent": 0.1}
    # exposure 1 on multiplication and percent, rate 0.2:
    # multiplication 0.5 + 0.2*0.5 = 0.6 (cap addition 0.8); percent 0.1 + 0.2*0.9 = 0.28 (cap 0.6)
    after = update_mastery(CHAIN, m, {"multiplication": 1.0, "percent": 1.0}, 0.2)
    assert after == pytest.approx({"addition": 0.8, "multiplication": 0.6, "percent": 0.28})
    # percent is capped by multiplication: 0.5 + 0.5*0.5 = 0.75 > 0.5
    capped = update_mastery(CHAIN, {"addition": 0.9, "multiplication": 0.5, "percent": 0.5}, {"percent": 1.0}, 0.5)
    assert capped["percent"] == 0.5
    assert update_mastery(CHAIN, m, {}, 0.3) == m  # nothing made available, nothing moves
    assert learning_rate(LOW) == pytest.approx(0.10) and learning_rate(HIGH) == pytest.approx(0.30)


@st.composite
def dag_and_dialogue(draw):
    n = draw(st.integers(2, 8))
    nodes = [f"u{i}" for i in range(n)]
    edges = [(nodes[i], nodes[j]) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    explicit = draw(st.dictionaries(st.sampled_from(nodes), st.floats(0, 1), max_size=2))
    profile = CognitiveProfile(*draw(st.lists(st.integers(1, 3), min_size=5, max_size=5)))
    turns = draw(st.lists(st.dictionaries(st.sampled_from(nodes), st.sampled_from([0.5, 1.0])), max_size=12))
    return nodes, edges, explicit, profile, turns


@settings(max_examples=150, deadline=None)
@given(dag_and_dialogue(), st.integers(0, 10**6))
def test_prerequisite_invariant_holds_after_every_update(case, seed):
    nodes, edges, explicit, profile, turns = case
    curriculum = curriculum_from_dict(
        {
            "schema": CURRICULUM_SCHEMA,
            "version": "h",
            "units": [
                {"id": u, "name": u, "band": "K-2", "description": u, "prerequisites": [a for a, b in edges if b == u]}
                for u in nodes
            ],
        }
    )
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    try:
        mastery = initial_mastery(graph, curriculum, StudentCondition(profile, mastery=explicit, seed=seed), str(seed))
    except ValueError as exc:  # only explicit values that themselves break the order may be rejected
        assert "breaks the prerequisite order" in str(exc)
        mastery = project(graph, {u: float(explicit.get(u, 0.5)) for u in nodes})
    assert not violations(graph, mastery)
    for exposure in turns:
        updated = update_mastery(graph, mastery, exposure, learning_rate(profile))
        assert not violations(graph, updated)
        assert all(updated[u] >= mastery[u] and 0.0 <= updated[u] <= 1.0 for u in nodes)
        assert all(updated[u] == mastery[u] for u in nodes if u not in exposure)  # only what was made available moves
        mastery = updated
