"""A pasted API key is refused and never printed back: not in ``error:`` lines, argparse errors or logs.

The flags are found by walking the parser ``pearl-verl`` builds, so a new command or flag is
covered without editing this file: every option whose name holds ``key`` or ``token`` and every
endpoint spec (metavar ``SPEC``) gets each key shape a user pastes. Handlers are replaced by one that
raises an :class:`InputError` repeating its arguments, so whatever gets past parsing still exercises
the ``error:`` line, and no command does real work here.
"""

from __future__ import annotations

import logging
import random
import string
import warnings

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError
from pearl_verl.eval.tutors import TutorSpec, parse_tutor_spec
from pearl_verl.llm.chat_types import EndpointConfig, check_api_key_env
from pearl_verl.redact import PLACEHOLDER, looks_secret, redact

RANDOM = "".join(random.Random(20240501).choices(string.ascii_letters + string.digits, k=40))
SHAPES = {
    "sk-proj": f"sk-proj-{RANDOM}",
    "bearer": f"Bearer sk-{RANDOM}",
    "name=value": f"OPENAI_API_KEY=sk-{RANDOM}",
}
SPEC = "name=endpoint,base_url=http://127.0.0.1:8000/v1,model=m,api_key_env={}"
REFUSAL = "looks like an API key"


def _key_flags():
    """``(command path, flag, kind)`` for every flag that may receive a key; kind: spec, key-env or other."""
    found = []
    for path, parser in cli.command_parsers(cli.build_parser()):
        for action in parser._actions:
            flag = action.option_strings[-1] if action.option_strings else None
            if flag is None or action.nargs == 0:
                continue
            if action.metavar == "SPEC" or "spec" in (action.help or "").lower():
                found.append((path, flag, "spec"))
            elif "key" in flag or "token" in flag:
                found.append((path, flag, "key-env" if "api-key" in flag else "other"))
    return found


KEY_FLAGS = _key_flags()


def _leaks(text: str) -> list[str]:
    return [RANDOM[i : i + 8] for i in range(len(RANDOM) - 7) if RANDOM[i : i + 8] in text]


@pytest.fixture(scope="module")
def parser():
    """The real parser, every handler replaced by one that echoes its arguments in an InputError."""

    def echo(args):
        raise InputError(f"cannot use {vars(args)}")

    built = cli.build_parser()
    for _, sub in cli.command_parsers(built):
        sub.set_defaults(handler=echo)
    return built


def _run(monkeypatch, capsys, parser, argv):
    monkeypatch.setattr(cli, "build_parser", lambda *a, **k: parser)
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


def test_the_walk_finds_the_known_flags():
    names = {(" ".join(path), flag) for path, flag, _ in KEY_FLAGS}
    assert {("judge", "--api-key-env"), ("eval-tutor", "--tutor"), ("eval-tutor", "--judge-api-key-env"),
            ("doctor", "--student-api-key-env"), ("gen-sft", "--teacher-api-key-env")} <= names
    assert sum(kind != "other" for _, _, kind in KEY_FLAGS) >= 17


def test_every_parser_redacts_its_errors():
    assert all(isinstance(sub, cli.RedactingParser) for _, sub in cli.command_parsers(cli.build_parser()))


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(("path", "flag", "kind"), KEY_FLAGS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_a_key_in_any_key_flag_is_refused_and_not_echoed(monkeypatch, capsys, parser, path, flag, kind, shape):
    value = SPEC.format(SHAPES[shape]) if kind == "spec" else SHAPES[shape]
    code, text = _run(monkeypatch, capsys, parser, [*path, flag, value])
    assert code in (1, 2), text
    assert not _leaks(text), text
    if kind != "other":
        assert REFUSAL in text and flag in text, text


@pytest.mark.parametrize("shape", list(SHAPES))
def test_argparse_errors_and_error_lines_are_redacted(monkeypatch, capsys, parser, shape):
    key = SHAPES[shape]
    for argv in (["eval-tutor", "--judge", key], ["judge", "x", "-o", "y", "--samples", key], ["judge", key, "-o", "y"],
                 ["advantage", key, key]):
        code, text = _run(monkeypatch, capsys, parser, argv)
        assert code in (1, 2) and not _leaks(text), text


def test_a_real_handler_error_line_is_redacted(capsys):
    assert cli.main(["advantage", f"/no/such/{SHAPES['sk-proj']}.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and not _leaks(err), err


def test_logs_and_warnings_are_redacted_once_the_cli_configured_logging(monkeypatch, capsys, parser, caplog):
    caplog.set_level(logging.WARNING)
    _run(monkeypatch, capsys, parser, ["advantage", "x"])  # parsed: the CLI configures logging
    logging.getLogger("pearl_verl.test").warning("endpoint said %s", SHAPES["bearer"])
    assert "Bearer " + PLACEHOLDER in caplog.text and not _leaks(caplog.text)
    shown = warnings.formatwarning(f"key {SHAPES['sk-proj']}", UserWarning, "x.py", 1)
    assert PLACEHOLDER in shown and not _leaks(shown)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_config_checks_name_the_field_not_the_value(shape):
    key = SHAPES[shape]
    for build in (lambda: check_api_key_env(key), lambda: EndpointConfig("http://h/v1", "m", api_key_env=key),
                  lambda: TutorSpec("t", base_url="http://h/v1", model="m", api_key_env=key),
                  lambda: parse_tutor_spec(SPEC.format(key)), lambda: parse_tutor_spec(f"name=x,{key}")):
        with pytest.raises(InputError, match=REFUSAL) as caught:
            build()
        message = str(caught.value)
        assert not any(key[i : i + 5] in message for i in range(len(key) - 4)), message


POSITIVES = [
    f"sk-proj-{RANDOM}", f"sk-ant-api03-{RANDOM}", f"sk-{RANDOM}", f"hf_{RANDOM[:34]}", f"ghp_{RANDOM[:36]}",
    f"github_pat_{RANDOM}", f"xoxb-1234567890-{RANDOM[:24]}", "AKIAIOSFODNN7EXAMPLE", f"AIza{RANDOM[:35]}",
    f"glpat-{RANDOM[:20]}", f"r8_{RANDOM[:37]}", f"gsk_{RANDOM}", f"Bearer {RANDOM[:20]}", f"bearer sk-{RANDOM}",
    f"OPENAI_API_KEY=sk-{RANDOM}", f"key={RANDOM[:24]}", RANDOM[:24], RANDOM,
]
NEGATIVES = [
    "/work/main/runs/2024-05-01/ckpt_step_100/actor", "http://127.0.0.1:8000/v1", "https://api.example/v1",
    "Qwen/Qwen3-30B-A3B-Instruct-2507", "meta-llama/Meta-Llama-3.1-70B-Instruct", "/models/Qwen3-0.6B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "9fceb02d0ae598e95dc970b74767f19372d61af8",  # a git SHA: hex is never flagged (hashes fill logs)
    "123e4567-e89b-12d3-a456-426614174000",  # a UUID-like run id
    "OPENAI_API_KEY", "PEARL_JUDGE_API_KEY_2", "antidisestablishmentarianism", "TrainingStalledExceptionHandler",
    "actor_rollout_ref.rollout.n=8", "data.train_files=/data/gsm8k/train.parquet", "hf_transfer", "sk-abc",
    "Bearer EMPTY", "2024-05-01T12:00:00.123456Z", "checkpoint20240501step1000", "run-20250101-123456-a1b2c3",
    "trainer.experiment_name=qwen3_30b_a3b_grpo_seed1234", "pearl_verl.verl_plugin.reward_manager",
]


@pytest.mark.parametrize("value", POSITIVES)
def test_secret_shapes_are_detected(value):
    assert looks_secret(value)


@pytest.mark.parametrize("value", NEGATIVES)
def test_ordinary_values_are_not_flagged(value):
    assert not looks_secret(value) and redact(value) == value


def test_redact_replaces_only_the_secret_tokens_of_a_longer_text():
    text = (f"error: api_key_env='sk-proj-{RANDOM}' at http://127.0.0.1:8000/v1 for Qwen/Qwen3-30B-A3B-Instruct-2507; "
            f"Authorization: Bearer {RANDOM[:30]}; OPENAI_API_KEY=sk-{RANDOM} tutor=name=x,api_key_env=JUDGE_KEY")
    assert redact(text) == (
        f"error: api_key_env='{PLACEHOLDER}' at http://127.0.0.1:8000/v1 for Qwen/Qwen3-30B-A3B-Instruct-2507; "
        f"Authorization: Bearer {PLACEHOLDER}; OPENAI_API_KEY={PLACEHOLDER} tutor=name=x,api_key_env=JUDGE_KEY"
    )
