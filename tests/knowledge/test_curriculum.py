"""The fixed vocabulary and prerequisite rules: shipped DAG, normalisation, rejection of bad rule files."""

import json
import re
from pathlib import Path

import networkx as nx
import pytest

from pearl_verl.knowledge.curriculum import CURRICULUM_SCHEMA, curriculum_from_dict, load_curriculum, normalise_name

DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def _doc(units):
    return {"schema": CURRICULUM_SCHEMA, "version": "t", "units": units}


def _unit(uid, prereqs=(), cues=()):
    return {
        "id": uid,
        "name": uid.title(),
        "band": "K-2",
        "description": "d",
        "prerequisites": list(prereqs),
        "cues": list(cues),
    }


def test_shipped_curriculum_is_a_dag_following_school_order():
    curriculum = load_curriculum()
    assert len(curriculum.units) == 52 and nx.is_directed_acyclic_graph(curriculum.graph)
    assert curriculum.graph.has_edge("addition", "multiplication")
    assert curriculum.graph.has_edge("multiplication", "division")
    assert curriculum.needs("addition", "percent") and curriculum.needs("fractions", "probability")
    assert not curriculum.needs("percent", "addition")
    assert curriculum.depth("place_value") == 0 and curriculum.depth("trigonometry") > curriculum.depth(
        "multiplication"
    )
    assert load_curriculum() is load_curriculum()  # parsed once


def test_normalisation_of_extractor_names():
    curriculum = load_curriculum()
    assert normalise_name("  Unit-Rates ") == "unit_rates"
    assert curriculum.normalise("percent_change") == "percent_change"
    assert curriculum.normalise("Percentages") == "percent"  # alias
    assert curriculum.normalise("Unit rate") == "rates"  # alias, plural dropped
    assert curriculum.normalise("Multiplcation") == "multiplication"  # close spelling
    assert curriculum.normalise("quantum field theory") is None
    assert curriculum.normalise("") is None


def test_cues_find_units_in_text():
    curriculum = load_curriculum()
    assert set(curriculum.units_in("She pays $12.50 for 3 pens, 20% off")) >= {"money", "percent", "percent_change"}
    assert "money" not in curriculum.units_in("Solve $3x = 6$ for $x$.")  # LaTeX dollars are not money
    assert "trigonometry" not in curriculum.units_in("The total cost is 5 dollars.")  # "cos" inside "cost"


def test_rule_file_with_a_cycle_is_rejected_naming_it():
    with pytest.raises(ValueError, match=r"cycle \((a -> b -> c|b -> c -> a|c -> a -> b)\)"):
        curriculum_from_dict(_doc([_unit("a", ["c"]), _unit("b", ["a"]), _unit("c", ["b"])]))


@pytest.mark.parametrize(
    "units, message",
    [
        ([_unit("a"), _unit("a")], "appears twice"),
        ([_unit("a", ["zzz"])], "unknown prerequisite 'zzz'"),
        ([_unit("a", cues=["(unclosed"])], "invalid cue regex"),
        ([{**_unit("a"), "colour": "red"}], r"unknown fields \['colour'\]"),
        ([], "no units"),
    ],
)
def test_bad_rule_files_fail_with_the_reason(units, message):
    with pytest.raises(ValueError, match=message):
        curriculum_from_dict(_doc(units))
    with pytest.raises(ValueError, match="schema"):
        curriculum_from_dict({"schema": "other", "units": units})


def test_custom_curriculum_file_loads(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_doc([_unit("a"), _unit("b", ["a"])])))
    curriculum = load_curriculum(path)
    assert curriculum.ids == ("a", "b") and curriculum.needs("a", "b") and curriculum.version == "t"


def test_docs_list_every_unit_with_its_prerequisites():
    text = DOCS.read_text(encoding="utf-8")
    for unit in load_curriculum().units.values():
        row = re.search(rf"^\| `{unit.id}` \|.*$", text, re.M)
        assert row, f"docs/simulator.md has no row for {unit.id}"
        assert all(f"`{p}`" in row.group(0) for p in unit.prerequisites), unit.id
