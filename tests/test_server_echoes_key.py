"""A server that echoes the Authorization header back cannot bring the key into anything we print or write.

The key is taken from an environment variable (``--api-key-env``); it is remembered there and
redacted wherever it shows up, whatever its shape: the one below looks like no key at all.
"""

import json

import pytest

from pearl_verl import cli
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.redact import PLACEHOLDER, redact

KEYS = {"plain": "correct-horse-battery-staple-42", "shaped": "sk-proj-Q7xVb2LmR9tZ4kW1pN8sY3hD"}


def _echoing(key: str):
    def respond(_body):
        # OpenAI's 401 names the key given (masked there; a proxy or a hostile server need not mask it)
        return Reply(status=401, error_message=f"Incorrect API key provided: {key}. Authorization: Bearer {key}")
    return respond


@pytest.mark.parametrize("kind", KEYS)
def test_judge_check_prints_and_writes_the_failure_without_the_key(capsys, monkeypatch, tmp_path, kind):
    key = KEYS[kind]
    monkeypatch.setenv("MY_JUDGE_KEY", key)
    report = tmp_path / "report.json"
    with LocalChatServer(_echoing(key), model="judge") as server:
        code = cli.main(["judge-check", "--no-progress", "--base-url", server.base_url, "--model", "judge",
                         "--api-key-env", "MY_JUDGE_KEY", "--max-retries", "0", "-o", str(report)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "http_401" in out + err  # the cause is still named
    written = report.read_text() if report.exists() else ""
    for text in (out, err, written):
        assert key not in text and "staple" not in text and "Q7xVb2" not in text


def test_doctor_cluster_prints_the_failing_endpoint_without_the_key(capsys, monkeypatch, tmp_path):
    key = KEYS["plain"]
    monkeypatch.setenv("MY_JUDGE_KEY", key)
    with LocalChatServer(_echoing(key), model="pearl-judge") as server:
        code = cli.main(["doctor", "--cluster", "--json", "--judge-base-url", server.base_url,
                         "--judge-model", "pearl-judge", "--judge-api-key-env", "MY_JUDGE_KEY"])
    out, err = capsys.readouterr()
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["checks"]} if out.lstrip().startswith("{") else {}
    assert key not in out + err and PLACEHOLDER in out + err, (out + err)[-2000:]
    assert not checks or not checks["judge endpoint"]["ok"]


def test_exception_names_and_words_are_not_redacted():
    for text in ("InvalidUrlClientError: bad URL", "LexerNoViableAltException at 'x'", "ConnectionRefusedError",
                 "HTTPServiceUnavailableError", "the judge endpoint refused the connection"):
        assert redact(text) == text
    for key in ("aB3dE5fG7hJ9kL1mN3pQ5", "AbCdEfGhIjKlMnOpQrStUv"):  # random mixes of case still are
        assert redact(f"key {key} given") == f"key {PLACEHOLDER} given"
