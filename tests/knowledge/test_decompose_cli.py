"""``pearl-verl decompose``: fills the cache once, then finds everything cached."""

import argparse
import json

import pytest

from pearl_verl.data.location import data_dir
from pearl_verl.knowledge import decompose_cli
from pearl_verl.knowledge.cache import DecompositionCache

DATA = data_dir()


def _run(*argv):
    parser = argparse.ArgumentParser()
    decompose_cli.register(parser.add_subparsers())
    args = parser.parse_args(["decompose", *argv])
    return args.handler(args)


def test_decompose_fills_the_cache_once(tmp_path, capsys):
    cache = tmp_path / "cache"
    assert _run(str(DATA / "gsm8k" / "test.jsonl"), "--limit", "20", "--cache-dir", str(cache)) == 0
    first = capsys.readouterr().out
    assert "problems 20 | cached before 0 | rules 20" in first
    keys = list(DecompositionCache(cache).keys())
    assert len(keys) == 20
    stored = json.loads(DecompositionCache(cache).path(keys[0]).read_text())
    assert stored["schema"] == "pearl_verl.knowledge/decomposition@1" and stored["units"]
    assert _run(str(DATA / "gsm8k" / "test.jsonl"), "--limit", "20", "--cache-dir", str(cache)) == 0
    assert "cached before 20 | rules 0" in capsys.readouterr().out


def test_decompose_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="--base-url and --model go together"):
        _run(str(DATA / "gsm8k" / "test.jsonl"), "--cache-dir", str(tmp_path), "--model", "m")


def test_every_extraction_falling_back_is_a_failed_run(tmp_path, capsys):
    from pearl_verl.llm.local_server import LocalChatServer, Reply

    cache = tmp_path / "cache"
    def no_json_schema(request):
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=400, error_message="json_schema is not supported")
        return "I'm here to help! What would you like to know?"

    with LocalChatServer(no_json_schema) as server:
        code = _run(str(DATA / "gsm8k" / "test.jsonl"), "--limit", "3", "--cache-dir", str(cache),
                    "--base-url", server.base_url, "--model", "local-test-model")
    captured = capsys.readouterr()
    assert code == 1 and "every extraction fell back to the rules (3 of 3 problems)" in captured.err
    assert "fallbacks 3" in captured.out and not list(DecompositionCache(cache).keys())  # a rerun tries again
    # the cause is on screen, not only in warnings: what the server refused, and the mode it took
    assert "structured output: json_object (the server refused json_schema: http_400: " in captured.out
