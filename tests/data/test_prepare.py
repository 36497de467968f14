"""prepare-data's core: the whole GSM8K test and MATH-500 sets convert, rows follow the
pearl_tutor contract and load in verl's RLHFDataset, conditions and splits are reproducible."""

import json
import random
from collections import Counter

import pytest

from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.location import data_dir
from pearl_verl.data.prepare import (
    AGENT_NAME,
    PrepareConfig,
    SourceSpec,
    answer_parses,
    build_rows,
    default_opening,
    split_of,
    write_rows,
)
from pearl_verl.data.sources import FIXTURES
from pearl_verl.dialogue.answers import answers_match, last_boxed
from pearl_verl.dialogue.sample import PearlSample

DATA = data_dir()
GSM8K_TEST, MATH500 = DATA / "gsm8k" / "test.jsonl", DATA / "math500" / "test.jsonl"


def _raw(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _unescaped(latex):
    return latex.replace("\\!", "").replace("\\$", "")


def _samples(rows):
    return [PearlSample.from_row(r["extra_info"], r["prompt"]) for r in rows]


@pytest.fixture(scope="module")
def opening():
    return default_opening()


@pytest.fixture(scope="module")
def full_rows(opening):
    specs = [SourceSpec("gsm8k", str(GSM8K_TEST)), SourceSpec("math", str(MATH500))]
    return build_rows(specs, PrepareConfig(val_fraction=0.0, dedup=False), opening)


def test_every_gsm8k_and_math500_row_converts_with_a_parsing_ground_truth(full_rows):
    rows, report = full_rows
    assert report.rows == {"train": 1319 + 500, "val": 0} and report.errors == []
    assert report.data_sources["train"] == {"gsm8k": 1319, "math": 500}
    # After normalisation no ground truth is unreadable (the three raw exceptions are below).
    assert report.unparsed_answers == []
    truths = [r["reward_model"]["ground_truth"] for r in rows["train"]]
    assert all(answer_parses(t) for t in truths)
    # GSM8K: the value after '####'; MATH: the same answer as the solution's last \boxed{}.
    for row, raw in zip(rows["train"][:1319], _raw(GSM8K_TEST), strict=True):
        assert row["reward_model"]["ground_truth"] == raw["answer"].split("####")[-1].strip().replace(",", "")
    disagreeing = [
        raw["answer"]
        for row, raw in zip(rows["train"][1319:], _raw(MATH500), strict=True)
        if not answers_match(row["reward_model"]["ground_truth"], _unescaped(last_boxed(raw["solution"])))
    ]
    assert disagreeing == []


def test_math500_raw_answers_math_verify_cannot_read_are_the_three_escaped_ones():
    raw = _raw(MATH500)
    unreadable = [(line, r["answer"]) for line, r in enumerate(raw, start=1) if not answer_parses(r["answer"])]
    assert unreadable == [(243, "\\$32,\\!348"), (460, "\\$18.90"), (489, "\\$36")]


def test_rows_follow_the_pearl_tutor_contract(opening):
    from pearl_verl.verl_plugin.agent_loop import AGENT_NAME as REGISTERED

    assert AGENT_NAME == REGISTERED  # the name verl routes rows by
    specs = [SourceSpec("gsm8k", "@fixture"), SourceSpec("mathdial", "@fixture")]
    rows, report = build_rows(specs, PrepareConfig(seed=3))
    assert report.rows["train"] + report.rows["val"] == len(rows["train"]) + len(rows["val"]) > 50
    for split, split_rows in rows.items():
        assert [r["extra_info"]["index"] for r in split_rows] == list(range(len(split_rows)))
        for row, sample in zip(split_rows, _samples(split_rows), strict=True):
            assert row["agent_name"] == AGENT_NAME and row["ability"] == "math"
            assert row["extra_info"]["split"] == split and row["data_source"] == sample.problem.source
            assert row["reward_model"] == {"style": "rule", "ground_truth": sample.problem.answer}
            assert row["prompt"] == [{"role": "user", "content": opening(sample.problem, sample.condition)}]


def test_mathdial_rows_start_from_the_real_incorrect_student_solution():
    rows, _ = build_rows([SourceSpec("mathdial", "@fixture", "train")], PrepareConfig(dedup=False))
    raw = _raw(FIXTURES["mathdial"])
    samples = _samples(rows["train"])
    assert [s.condition.misconception for s in samples] == [r["student_incorrect_solution"].strip() for r in raw]
    for r, row in zip(raw, rows["train"], strict=True):
        assert r["student_incorrect_solution"].strip()[:40] in row["prompt"][0]["content"]
    never, _ = build_rows(
        [SourceSpec("mathdial", "@fixture", "train")], PrepareConfig(sampler=ConditionSampler(misconception_rate=0.0))
    )
    assert not any(s.condition.misconception for s in _samples(never["train"]))


def test_conditions_are_reproducible_and_independent_of_the_other_sources():
    gsm = SourceSpec("gsm8k", "@fixture", "train")
    alone, _ = build_rows([gsm], PrepareConfig(seed=5))
    mixed, _ = build_rows([SourceSpec("math", "@fixture", "train"), gsm], PrepareConfig(seed=5))
    other, _ = build_rows([gsm], PrepareConfig(seed=6))
    conditions = [s.condition for s in _samples(alone["train"])]
    assert conditions == [s.condition for s in _samples(mixed["train"]) if s.problem.source == "gsm8k"]
    assert conditions != [s.condition for s in _samples(other["train"])]


def test_ability_mix_and_conditions_per_problem():
    config = PrepareConfig(sampler=ConditionSampler({"low": 0.5, "medium": 0.0, "high": 0.5}), conditions_per_problem=4)
    rows, report = build_rows([SourceSpec("math", "@fixture", "train")], config)
    samples = _samples(rows["train"])
    assert len(samples) == 200 and report.abilities["train"].get("medium", 0) == 0
    assert abs(report.abilities["train"]["low"] - 100) < 30
    per_problem = Counter(s.problem.problem_id for s in samples)
    assert set(per_problem.values()) == {4}
    first = [s for s in samples if s.problem.problem_id == samples[0].problem.problem_id]
    assert len({s.condition.seed for s in first}) == 4  # four different students for one problem


def test_auto_split_is_by_question_and_stable():
    items = [f"Question number {i}: what is {i} + {i}?" for i in range(2000)]
    spec = SourceSpec("gsm8k", "x.jsonl")
    splits = [split_of(spec, q, 0.1) for q in items]
    assert 150 < splits.count("val") < 250
    assert splits == [split_of(spec, "  " + q.upper() + " ", 0.1) for q in items]  # normalised question
    assert split_of(SourceSpec("gsm8k", "x.jsonl", "val"), items[0], 0.0) == "val"
    assert {split_of(spec, q, 0.0) for q in items} == {"train"}


def test_duplicates_and_train_val_overlap_are_dropped(tmp_path):
    row = {"question": "Tom has 3 apples and buys 2. How many?", "answer": "3 + 2 = 5\n#### 5"}
    other = {"question": "Ann has 4 pens and loses 1. How many?", "answer": "4 - 1 = 3\n#### 3"}
    train, val = tmp_path / "train.jsonl", tmp_path / "val.jsonl"
    train.write_text("\n".join(json.dumps(r) for r in (row, row, other)) + "\n")
    val.write_text(json.dumps(row) + "\n")
    specs = [SourceSpec("gsm8k", str(train), "train"), SourceSpec("gsm8k", str(val), "val")]
    rows, report = build_rows(specs, PrepareConfig())
    assert (report.duplicates, report.overlaps) == (1, 1)
    assert [s.problem.question for s in _samples(rows["train"])] == [other["question"]]
    assert [s.problem.question for s in _samples(rows["val"])] == [row["question"]]
    kept, report = build_rows(specs, PrepareConfig(dedup=False))
    assert (len(kept["train"]), report.duplicates, report.overlaps) == (3, 0, 0)


def test_unparsed_answers_are_reported_with_their_row_and_optionally_dropped(tmp_path):
    path = tmp_path / "math.jsonl"
    good = {"problem": "What is 1+1?", "solution": "It is $\\boxed{2}$.", "answer": "2"}
    bad = {"problem": "Name the shape.", "solution": "A \\boxed{\\text{}} shape.", "answer": "\\text{}"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    rows, report = build_rows([SourceSpec("math", str(path), "train")], PrepareConfig())
    assert [(u["origin"], u["answer"]) for u in report.unparsed_answers] == [(f"{path}:2", "\\text{}")]
    assert len(rows["train"]) == 2
    dropped, _ = build_rows([SourceSpec("math", str(path), "train")], PrepareConfig(drop_unparsed_answers=True))
    assert len(dropped["train"]) == 1


def test_the_same_source_twice_is_refused():
    with pytest.raises(ValueError, match="occurs 2 times: the same file was given twice"):
        build_rows([SourceSpec("gsm8k", "@fixture"), SourceSpec("gsm8k", "@fixture")], PrepareConfig(dedup=False))


@pytest.mark.parametrize(("text", "match"), [
    ("gsm8k", "must look like KIND\\[:SPLIT\\]=PATH"),
    ("aime=x.jsonl", "source kind 'aime' must be one of"),
    ("gsm8k:test=x.jsonl", "source split 'test' must be one of"),
])
def test_source_spec_errors(text, match):
    with pytest.raises(ValueError, match=match):
        SourceSpec.parse(text)


def test_config_validation():
    with pytest.raises(ValueError, match=r"val_fraction=1.0: a finite number at least 0 and less than 1 \(0 puts auto sources in train\)"):
        PrepareConfig(val_fraction=1.0)
    with pytest.raises(ValueError, match="conditions_per_problem=0: a whole number from 1 to"):
        PrepareConfig(conditions_per_problem=0)


def test_prepared_parquet_loads_in_verls_rlhf_dataset_and_parses_as_the_agent_loop_does(full_rows, tmp_path):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from pearl_verl.models.tiny import build_offline_tokenizer

    rows, _ = full_rows
    path = write_rows(rows["train"], tmp_path / "train.parquet")
    tokenizer = build_offline_tokenizer(tmp_path / "tok")
    config = {"max_prompt_length": 4096, "cache_dir": str(tmp_path / "cache"), "filter_overlong_prompts_workers": 1}
    dataset = RLHFDataset(str(path), tokenizer, config)
    assert len(dataset) == 1819  # no prompt filtered out, none lost in Arrow's round trip
    for index in random.Random(0).sample(range(len(dataset)), 40):
        item = dataset[index]
        assert item["agent_name"] == AGENT_NAME and item["index"] == index
        sample = PearlSample.from_row(item["extra_info"], item["raw_prompt"])
        assert sample == _samples([rows["train"][index]])[0]
        assert item["reward_model"]["ground_truth"] == sample.problem.answer
