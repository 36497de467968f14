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


@pytest.mark.parametrize("wrap", ["\n", "\r\n    ", "\n> "], ids=["newline", "crlf and indent", "quoted line"])
def test_a_key_split_across_lines_reaches_neither_stderr_nor_the_results_file(capsys, monkeypatch, tmp_path,
                                                                              make_episode, wrap):
    key = KEYS["plain"]
    monkeypatch.setenv("MY_JUDGE_KEY", key)
    wrapped = key[:11] + wrap + key[11:]  # a server that wraps its long error line inside the key

    def respond(_body):
        return Reply(status=500, error_message=f"upstream refused the key {wrapped} (Authorization: Bearer {wrapped})")

    source, results = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({"id": "d0", **make_episode(["help", "What is 3 x 4?", "12"]).to_dict()}) + "\n")
    with LocalChatServer(respond, model="judge") as server:
        code = cli.main(["judge", str(source), "-o", str(results), "--base-url", server.base_url, "--model", "judge",
                         "--api-key-env", "MY_JUDGE_KEY", "--max-retries", "0", "--no-progress"])
    out, err = capsys.readouterr()
    row = json.loads(results.read_text())
    assert code == 1 and row["judge_ok"] == 0 and "http_500" in row["error"]  # the failure is kept, and named
    for text in (out, err, results.read_text()):
        assert "horse-batt" not in text and "ery-staple" not in text, text


def test_a_result_line_carries_no_remembered_key_in_any_form():
    from pearl_verl.jsonl import json_line
    from pearl_verl.redact import remember_secret

    key = "Zx9/Qw3+Lm7Tk&Rv=Pq4"
    remember_secret(key)
    for value in ({"reply": f"echo {key}"}, {key: 1}, {"reply": f"echo {key[:6]}\n{key[6:]}"}, [f"a/{key}/b"]):
        for ascii_only in (True, False):
            line = json_line(value, ensure_ascii=ascii_only)
            assert line.endswith("\n") and "Qw3" not in line and "Rv=" not in line, line
            assert PLACEHOLDER in json.dumps(json.loads(line))  # still one line of JSON, the key's place marked


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
