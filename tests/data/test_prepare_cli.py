"""``pearl-verl prepare-data`` end to end: files, exit codes, located errors, the hub offline, the knowledge cache."""

import json
import re

import pandas as pd
import pytest

from pearl_verl import cli
from pearl_verl.data.prepare_cli import SUMMARY_NAME, parse_ability_mix
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.knowledge.cache import DecompositionCache
from pearl_verl.llm.local_server import LocalChatServer

MODULE = "pearl_verl.data.prepare_cli"


@pytest.fixture
def pearl_verl(monkeypatch):
    """``pearl-verl`` as the console script runs it (exit code, 'error:' on stderr), with this command wired."""
    if MODULE not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, MODULE))
    return lambda *argv: cli.main(["prepare-data", *map(str, argv)])


def test_fixtures_prepare_into_train_val_and_a_summary(pearl_verl, tmp_path, capsys):
    out = tmp_path / "data"
    code = pearl_verl("gsm8k=@fixture", "math=@fixture", "mathdial=@fixture", "-o", out, "--val-fraction", "0.2")
    assert code == 0
    printed = capsys.readouterr().out
    train, val = pd.read_parquet(out / "train.parquet"), pd.read_parquet(out / "val.parquet")
    summary = json.loads((out / SUMMARY_NAME).read_text())
    assert summary["rows"] == {"train": len(train), "val": len(val)} and len(val) > 5
    assert len(train) + len(val) + summary["duplicates"] == 120 and summary["errors"] == []
    assert set(train["data_source"]) == {"gsm8k", "math", "mathdial"}
    assert f"train: {len(train)} rows" in printed and "misconception starts" in printed
    # What verl hands the agent loop parses back into a problem and a condition.
    row = train.iloc[0]
    sample = PearlSample.from_row(row["extra_info"], list(row["prompt"]))
    assert sample.problem.answer == row["reward_model"]["ground_truth"]


def test_a_malformed_file_fails_with_file_line_and_field_and_skipping_reports_the_count(pearl_verl, tmp_path, capsys):
    good = json.dumps({"question": "Tom has 3 apples and buys 2. How many?", "answer": "3 + 2 = 5\n#### 5"})
    path = tmp_path / "bad.jsonl"
    lines = [good, "{not json", json.dumps({"question": "q?"}), json.dumps({"question": " ", "answer": "#### 1"}), good]
    path.write_text("\n".join(lines) + "\n")
    assert pearl_verl(f"gsm8k={path}", "-o", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"error: {path}:2: field '<line>': not valid JSON" in err
    assert not (tmp_path / "out").exists()

    assert pearl_verl(f"gsm8k={path}", "-o", tmp_path / "out", "--skip-errors", "--keep-duplicates") == 0
    printed = capsys.readouterr().out
    assert f"skipped 3 malformed row(s); first: {path}:2: field '<line>'" in printed
    summary = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())
    assert [re.sub(r"^.*?:(\d+): field '([^']+)'.*$", r"\1 \2", e) for e in summary["errors"]] == [
        "2 <line>",
        "3 answer",
        "4 question",
    ]
    assert sum(summary["rows"].values()) == 2


def test_missing_answer_and_empty_problem_are_located_in_math_and_parquet_sources(pearl_verl, tmp_path, capsys):
    math = tmp_path / "math.jsonl"
    math.write_text(json.dumps({"problem": "", "solution": "x", "answer": "1"}) + "\n")
    assert pearl_verl(f"math={math}", "-o", tmp_path / "o") == 2
    assert f"{math}:1: field 'problem': missing or empty" in capsys.readouterr().err
    parquet = tmp_path / "gsm.parquet"
    rows = [{"question": "How many?", "answer": "#### 4"}, {"question": "How many?", "answer": "four"}]
    pd.DataFrame(rows).to_parquet(parquet)
    assert pearl_verl(f"gsm8k={parquet}", "-o", tmp_path / "o") == 2
    assert f"{parquet}: row 2: field 'answer': GSM8K answer has no '####" in capsys.readouterr().err


def test_a_hugging_face_name_fails_clearly_when_the_hub_is_unreachable(pearl_verl, tmp_path, capsys, monkeypatch):
    import datasets
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    assert pearl_verl("math=hf:HuggingFaceH4/MATH-500@test", "-o", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert "Could not load the Hugging Face dataset HuggingFaceH4/MATH-500, split test" in err
    assert "If this machine is offline" in err and "pass the local .jsonl/.json/.parquet file instead" in err
    assert pearl_verl("gsm8k=hf:openai/gsm8k", "-o", tmp_path / "o") == 2
    assert "must look like hf:<dataset>[:<config>]@<split>" in capsys.readouterr().err


def test_the_knowledge_cache_is_filled_with_rules_offline_and_with_an_extraction_endpoint(pearl_verl, tmp_path, capsys):
    cache = tmp_path / "rules-cache"
    assert pearl_verl("gsm8k=@fixture", "--limit", "6", "-o", tmp_path / "a", "--cache-dir", cache) == 0
    assert "(rules-v1): 6 problems | cached before 0 | rules 6" in capsys.readouterr().out
    assert len(list(DecompositionCache(cache).keys())) == 6

    def extractor(body):
        steps = body["messages"][1]["content"].split("Reference solution steps:\n", 1)[1].splitlines()
        return json.dumps({"units": ["subtraction", "multiplication"], "steps": [["subtraction"]] * len(steps)})

    llm_cache = tmp_path / "llm-cache"
    with LocalChatServer(extractor, model="student") as server:
        args = ["gsm8k=@fixture", "--limit", "6", "-o", tmp_path / "b", "--cache-dir", llm_cache]
        assert pearl_verl(*args, "--extract-base-url", server.base_url, "--extract-model", "student") == 0
        assert "(llm:student:x1): 6 problems | cached before 0 | rules 0 | llm 6 | fallbacks 0 | llm calls 6" in (
            capsys.readouterr().out
        )
        assert pearl_verl(*args, "--extract-base-url", server.base_url, "--extract-model", "student") == 0
        assert "cached before 6 | rules 0 | llm 0" in capsys.readouterr().out
        assert len(server.requests) == 6
    stored_cache = DecompositionCache(llm_cache)
    stored = [json.loads(stored_cache.path(k).read_text()) for k in stored_cache.keys()]
    assert len(stored) == 6 and all(s["source"] == "llm" and s["extractor"] == "llm:student:x1" for s in stored)
    assert all({"subtraction", "multiplication"} <= set(s["units"]) for s in stored)


def test_an_extractor_whose_every_reply_falls_back_fails_and_names_the_structured_output(pearl_verl, tmp_path, capsys):
    from pearl_verl.llm.local_server import Reply

    def chatty(request):  # llama-cpp-python's answer to json_schema, then a weak model's prose
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=500, error_message="Input should be 'text' or 'json_object'")
        return "Sure! The units are addition and subtraction."

    with LocalChatServer(chatty, model="student") as server:
        argv = ["gsm8k=@fixture", "--limit", "2", "-o", tmp_path / "e", "--cache-dir", tmp_path / "cache",
                "--extract-base-url", server.base_url, "--extract-model", "student", "--extract-max-retries", "0"]
        assert pearl_verl(*argv) == 1
    captured = capsys.readouterr()
    assert "structured output: json_object (the server refused json_schema: http_500: " in captured.out
    assert "error: every extraction fell back to the rules (2 of 2 problems): student at http" in captured.err
    assert (tmp_path / "e" / "train.parquet").exists()  # the rows are written; only the cache stayed empty
    summary = json.loads((tmp_path / "e" / "prepare_summary.json").read_text())
    assert summary["knowledge"]["structured_output"].startswith("structured output: json_object")


def test_a_training_student_reads_the_prefilled_cache_without_calling_the_endpoint(pearl_verl, tmp_path):
    import asyncio

    from pearl_verl.data.prepare import problems_of
    from pearl_verl.student.simulator import PearlStudentSimulator
    from pearl_verl.student.student_config import StudentConfig

    cache = tmp_path / "cache"

    def extractor(body):
        steps = body["messages"][1]["content"].split("Reference solution steps:\n", 1)[1].splitlines()
        return json.dumps({"units": ["division"], "steps": [["division"]] * len(steps)})

    with LocalChatServer(extractor, model="student") as server:
        argv = ["gsm8k=@fixture", "--limit", "3", "-o", tmp_path / "d", "--cache-dir", cache, "--val-fraction", "0"]
        assert pearl_verl(*argv, "--extract-base-url", server.base_url, "--extract-model", "student") == 0
    rows = {"train": pd.read_parquet(tmp_path / "d" / "train.parquet").to_dict(orient="records")}
    for row in rows["train"]:
        row["prompt"] = list(row["prompt"])
    # The server is gone: any extraction call would fail and fall back to the rules.
    config = StudentConfig(
        backend="offline", decomposer="llm", base_url=server.base_url, model="student", cache_dir=str(cache)
    )
    simulator = PearlStudentSimulator(config)
    for problem in problems_of(rows):
        decomposition, calls = asyncio.run(simulator.decomposer.decompose(problem))
        assert calls == 0 and decomposition.source == "llm" and "division" in decomposition.units
    assert simulator.decomposer.stats["disk_hits"] == 3 and simulator.decomposer.stats["llm_calls"] == 0


def test_argument_errors(pearl_verl, tmp_path, capsys):
    assert pearl_verl("gsm8k=@fixture", "-o", tmp_path, "--extract-model", "m") == 2
    assert "--extract-base-url and --extract-model go together" in capsys.readouterr().err
    endpoint = ["--extract-base-url", "http://h/v1", "--extract-model", "m"]
    assert pearl_verl("gsm8k=@fixture", "-o", tmp_path, *endpoint) == 2
    assert "needs --cache-dir" in capsys.readouterr().err
    assert parse_ability_mix("low=1, high=3") == {"low": 0.25, "high": 0.75}
    for bad, match in [("low=x", "is not a number"), ("genius=1", "must be LEVEL=WEIGHT"), ("low=0", "positive sum")]:
        with pytest.raises(ValueError, match=match):
            parse_ability_mix(bad)
