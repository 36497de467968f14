"""Matched items: drawn once from the seed, per ability band, from prepared parquet, and guarded on resume."""

import pytest

from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.eval.protocol import (
    EvalProtocol,
    Manifest,
    SourceProblem,
    draw_items,
    load_eval_problems,
    resolve_manifest,
    write_manifest,
)


@pytest.fixture
def problems(fx):
    return load_eval_problems([fx.GSM8K], limit=5)


def test_items_are_a_function_of_the_seed(problems):
    a, b = draw_items(problems, EvalProtocol(seed=3)), draw_items(problems, EvalProtocol(seed=3))
    assert [i.to_dict() for i in a] == [i.to_dict() for i in b]
    other = draw_items(problems, EvalProtocol(seed=4))
    assert [i.condition for i in a] != [i.condition for i in other]
    assert len({i.item_id for i in a}) == 5 and all(i.seed == i.condition.seed for i in a)


def test_ability_all_runs_every_problem_once_per_band(problems):
    items = draw_items(problems, EvalProtocol(ability="all"))
    assert len(items) == 15
    bands = [i.condition.profile.ability for i in items]
    assert bands == ["low"] * 5 + ["medium"] * 5 + ["high"] * 5
    assert [i.problem for i in items[:5]] == [i.problem for i in items[5:10]]
    assert {i.condition.profile.ability for i in draw_items(problems, EvalProtocol(ability="high"))} == {"high"}


def test_misconceptions_of_mathdial_problems_are_used(fx):
    items = draw_items(load_eval_problems([fx.MATHDIAL], limit=3), EvalProtocol())
    assert all(i.condition.misconception for i in items)
    assert all(
        i.condition.misconception is None
        for i in draw_items(load_eval_problems([fx.MATHDIAL], 3), EvalProtocol(misconception_rate=0.0))
    )


def test_a_prepared_parquet_keeps_its_conditions(tmp_path, problems):
    import pandas as pd

    condition = StudentCondition(CognitiveProfile(1, 1, 1, 1, 1), seed=77)
    sample = PearlSample(problems[0].problem, condition, "Hi, can you help me?")
    path = tmp_path / "prepared.parquet"
    pd.DataFrame([{"prompt": sample.to_prompt(), "extra_info": sample.to_extra_info()}]).to_parquet(path)
    loaded = load_eval_problems([path])
    assert loaded == [SourceProblem(sample.problem, None, condition)]
    assert draw_items(loaded, EvalProtocol(seed=9))[0].condition == condition


def test_protocol_validation():
    with pytest.raises(ValueError, match="max_turns=0"):
        EvalProtocol(max_turns=0)
    with pytest.raises(ValueError, match="ability='some'"):
        EvalProtocol(ability="some")
    with pytest.raises(ValueError, match="top_p"):
        EvalProtocol(top_p=0.0)


def test_resolve_manifest_extends_tutors_and_refuses_changes(tmp_path, problems):
    items = tuple(draw_items(problems, EvalProtocol()))
    first = Manifest(EvalProtocol(), items, {"judge": "x"}, {"a": {"kind": "scripted"}}, ("pearl",))
    write_manifest(tmp_path, first)
    merged = resolve_manifest(
        tmp_path, Manifest(EvalProtocol(), items, {"judge": "x"}, {"b": {"kind": "hf"}}, ("mathdial",))
    )
    assert list(merged.tutors) == ["a", "b"] and merged.simulators == ("pearl", "mathdial")
    with pytest.raises(ValueError, match="student or judge"):
        resolve_manifest(tmp_path, Manifest(EvalProtocol(), items, {"judge": "y"}, {}, ()))
    with pytest.raises(ValueError, match="already has a tutor named 'a'"):
        resolve_manifest(tmp_path, Manifest(EvalProtocol(), items, {"judge": "x"}, {"a": {"kind": "hf"}}, ()))
