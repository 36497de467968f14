"""Problem sources: every row of the shipped fixtures and of data/ reads; malformed rows are located."""

import json
from pathlib import Path

import pytest

from pearl_verl.data.location import data_dir
from pearl_verl.data.sources import SourceError, load_source
from pearl_verl.dialogue.answers import answers_match

DATA = data_dir()
FIXTURES = Path(__file__).resolve().parents[2] / "pearl_verl" / "resources" / "data"


@pytest.mark.parametrize(("kind", "path", "rows"), [
    ("gsm8k", DATA / "gsm8k" / "test.jsonl", 1319),
    ("math", DATA / "math500" / "test.jsonl", 500),
    ("mathdial", DATA / "mathdial" / "test.jsonl", 599),
    ("gsm8k", FIXTURES / "gsm8k" / "test_first50.jsonl", 50),
    ("math", FIXTURES / "math500" / "test_first50.jsonl", 50),
    ("mathdial", FIXTURES / "mathdial" / "test_first20.jsonl", 20),
])
def test_whole_files_convert(kind, path, rows):
    items, errors = load_source(path, kind)
    assert len(items) == rows and errors == []
    assert len({item.problem.problem_id for item in items}) == rows
    assert all(item.problem.answer and item.problem.question for item in items)


def test_gsm8k_answers_agree_with_the_rationale_and_parse():
    items, _ = load_source(DATA / "gsm8k" / "test.jsonl", "gsm8k")
    first = items[0].problem
    assert first.answer == "18" and "####" not in first.reference_solution and "<<" not in first.reference_solution
    assert all(answers_match(item.problem.answer, item.problem.answer) for item in items[:200])


def test_mathdial_keeps_the_real_misconception():
    items, _ = load_source(DATA / "mathdial" / "test.jsonl", "mathdial")
    assert all(item.misconception for item in items[:50])
    assert items[0].problem.answer == "10" and not items[0].problem.reference_solution.strip().endswith("\n 10")


@pytest.mark.parametrize(("content", "kind", "match"), [
    ('{"question": "q", "answer": "x\\n#### 4"}\n{bad json\n', "gsm8k", r":2: field '<line>': not valid JSON"),
    ('{"question": "q", "answer": "no final line"}\n', "gsm8k", r":1: field 'answer': GSM8K answer has no '####"),
    ('{"question": "  ", "answer": "#### 3"}\n', "gsm8k", r":1: field 'question': missing or empty"),
    ('{"problem": "p", "solution": "no box"}\n', "math", r":1: field 'answer': missing, and the solution has no"),
    ('[1, 2]\n', "math", r":1: field '<line>': expected an object, got list"),
])
def test_malformed_rows_are_located(tmp_path, content, kind, match):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(SourceError, match=match):
        load_source(path, kind)


def test_skipping_errors_reports_how_many(tmp_path):
    good = json.dumps({"question": "q", "answer": "r\n#### 4"})
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good, "{oops", good, json.dumps({"question": "q"})]) + "\n")
    items, errors = load_source(path, "gsm8k", skip_errors=True)
    assert len(items) == 2 and [(e.line, e.field) for e in errors] == [(2, "<line>"), (4, "answer")]


def test_unknown_kind():
    with pytest.raises(ValueError, match="Unknown source kind 'aime'"):
        load_source(FIXTURES / "gsm8k" / "test_first50.jsonl", "aime")
