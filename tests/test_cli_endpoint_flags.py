"""Every command that calls an LLM endpoint takes the shared endpoint flags and hands them to the client.

The client's constructor is replaced by one that raises with the :class:`EndpointConfig` it was
given, so each command runs up to the moment it would open a connection and no further: what is
checked is the endpoint the command really builds, not only that argparse took the flags.
"""

import argparse
from pathlib import Path

import pytest

from pearl_verl import cli
from pearl_verl.llm.cli_flags import ENDPOINT_FLAGS, add_endpoint_flags, endpoint_config
from pearl_verl.llm.client import OpenAIChatClient

RESOURCES = Path(__file__).resolve().parents[1] / "pearl_verl" / "resources"
PROBLEMS = RESOURCES / "data" / "gsm8k" / "test_first50.jsonl"
PAIRS = RESOURCES / "eval" / "pairs" / "synthetic_pairs.jsonl"
MTB = RESOURCES / "eval" / "mtb"
URL = "http://127.0.0.1:9/v1"  # never contacted

# command: (argv, naming the endpoint's model "m"; {O} a scratch folder, {D} a dialogue file, {S} prepared rows,
#           its timeout, retries and concurrency flags, and their defaults as they were before the shared flags;
#           decompose's and prepare-data's 16 extractions in flight were a semaphore over a client of 64 then)
COMMANDS = {
    "decompose": (
        f"decompose {PROBLEMS} --cache-dir {{O}}/cache --base-url {URL} --model m",
        ("--timeout", "--max-retries", "--concurrency"), (120.0, 3, 16),
    ),
    "simulate": (
        f"simulate {PROBLEMS} --limit 1 --backend llm --base-url {URL} --model m",
        ("--timeout", "--max-retries", "--concurrency"), (120.0, 3, 8),
    ),
    "simulate tutor": (
        f"simulate {PROBLEMS} --limit 1 --tutor endpoint --tutor-base-url {URL} --tutor-model m",
        ("--timeout", "--max-retries", "--concurrency"), (120.0, 3, 8),
    ),
    "judge": (
        f"judge {{D}} -o {{O}}/scores.jsonl --base-url {URL} --model m",
        ("--timeout", "--max-retries", "--concurrency"), (300.0, 3, 32),
    ),
    "eval-tutor judge": (
        f"eval-tutor {PROBLEMS} --limit 1 --tutor name=s,scripted=socratic --out {{O}}/run --progress off "
        f"--judge-base-url {URL} --judge-model m",
        ("--judge-timeout", "--judge-max-retries", "--judge-concurrency"), (300.0, 3, 32),
    ),
    "eval-tutor student": (
        f"eval-tutor {PROBLEMS} --limit 1 --tutor name=s,scripted=socratic --out {{O}}/run --progress off "
        f"--judge none --student-backend llm --student-base-url {URL} --student-model m",
        ("--student-timeout", "--student-max-retries", "--student-concurrency"), (120.0, 3, 64),
    ),
    "eval-rm judge": (
        f"eval-rm {PAIRS} --out {{O}}/rm --progress off --judge-base-url {URL} --judge-model m",
        ("--judge-timeout", "--judge-max-retries", "--judge-concurrency"), (300.0, 3, 32),
    ),
    "eval-rm pairwise": (
        f"eval-rm {PAIRS} --out {{O}}/rm --progress off --rm pairwise --rm-base-url {URL} --rm-model m",
        ("--rm-timeout", "--rm-max-retries", "--concurrency"), (120.0, 3, 8),
    ),
    "eval-simulator": (
        f"eval-simulator {{D}} --out {{O}}/sim --progress off --annotator-base-url {URL} --annotator-model m",
        ("--annotator-timeout", "--annotator-max-retries", "--concurrency"), (120.0, 3, 16),
    ),
    "eval-mtb": (
        f"eval-mtb --data-dir {MTB} --tasks problem_solving --limit 1 --out {{O}}/mtb --progress off "
        f"--model-base-url {URL} --model m",
        ("--model-timeout", "--model-max-retries", "--concurrency"), (120.0, 3, 16),
    ),
    "gen-sft teacher": (
        f"gen-sft {{S}} -o {{O}}/sft --no-progress --teacher-base-url {URL} --teacher-model m",
        ("--teacher-timeout", "--teacher-max-retries", "--concurrency"), (300.0, 3, 32),
    ),
    "gen-sft student": (
        f"gen-sft {{S}} -o {{O}}/sft --no-progress --teacher scripted --student-backend llm "
        f"--student-base-url {URL} --student-model m",
        ("--student-timeout", "--student-max-retries", "--student-concurrency"), (120.0, 3, 64),
    ),
    "gen-sft judge": (
        f"gen-sft {{S}} -o {{O}}/sft --no-progress --teacher scripted --judge-backend llm "
        f"--judge-base-url {URL} --judge-model m",
        ("--judge-timeout", "--judge-max-retries", "--judge-concurrency"), (300.0, 3, 32),
    ),
    "prepare-data": (
        f"prepare-data gsm8k=@fixture -o {{O}}/prep --limit 2 --cache-dir {{O}}/cache "
        f"--extract-base-url {URL} --extract-model m",
        ("--extract-timeout", "--extract-max-retries", "--extract-concurrency"), (120.0, 3, 16),
    ),
}


class Built(Exception):
    """Raised in place of opening a client: carries the endpoint the command built."""

    def __init__(self, endpoint):
        super().__init__(endpoint)
        self.endpoint = endpoint


@pytest.fixture(autouse=True)
def no_client(monkeypatch):
    def capture(self, endpoint, *args, **kwargs):
        raise Built(endpoint)

    monkeypatch.setattr(OpenAIChatClient, "__init__", capture)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prepared")
    assert cli.main(["prepare-data", "gsm8k=@fixture", "-o", str(out), "--limit", "2", "--val-fraction", "0"]) == 0
    return out / "train.parquet"


def _argv(command, tmp_path, prepared, extra=()):
    dialogues = tmp_path / "dialogues.jsonl"
    dialogues.write_text("{}\n" if command == "judge" else "")  # judge refuses an empty input before building
    template = COMMANDS[command][0]
    return template.format(O=tmp_path, D=dialogues, S=prepared).split() + [str(a) for a in extra]


def _built(argv):
    with pytest.raises(Built) as caught:
        cli.main(argv)
    return caught.value.endpoint


@pytest.mark.parametrize("command", list(COMMANDS))
def test_endpoint_flags_reach_the_client(command, tmp_path, prepared):
    timeout, retries, concurrency = COMMANDS[command][1]
    endpoint = _built(_argv(command, tmp_path, prepared, [timeout, 7, retries, 2, concurrency, 3]))
    assert (endpoint.base_url, endpoint.model) == (URL, "m")
    assert (endpoint.timeout_s, endpoint.max_retries, endpoint.max_concurrency) == (7.0, 2, 3)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_defaults_are_those_of_before(command, tmp_path, prepared):
    endpoint = _built(_argv(command, tmp_path, prepared))
    assert (endpoint.timeout_s, endpoint.max_retries, endpoint.max_concurrency) == COMMANDS[command][2]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_value_is_an_input_error_naming_the_field(command, tmp_path, prepared, capsys):
    timeout = COMMANDS[command][1][0]
    with pytest.raises(SystemExit) as exited:
        cli.main(_argv(command, tmp_path, prepared, [timeout, 0]))
    assert exited.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1  # refused while parsing, naming the flag, with EndpointConfig's declared range
    assert errors[0].endswith(f"error: argument {timeout}: got 0; allowed: a finite number greater than 0 and at most "
                              "1,000,000,000")


def test_flags_follow_the_prefix_and_the_command_defaults(capsys):
    parser = argparse.ArgumentParser()
    add_endpoint_flags(parser, "judge-", role="judge", defaults={"timeout_s": 300.0})
    assert [a.option_strings[0] for a in parser._actions[1:]] == [f"--judge-{flag}" for flag in ENDPOINT_FLAGS]

    def build(*argv):
        return endpoint_config(parser.parse_args(list(argv)), "judge-")

    assert build("--judge-structured-output", "json_schema") is None  # no base URL: the command's offline path
    endpoint = build("--judge-base-url", URL, "--judge-model", "j")
    assert (endpoint.timeout_s, endpoint.max_retries, endpoint.max_concurrency) == (300.0, 3, 64)
    assert endpoint.structured_output == "auto"
    with pytest.raises(SystemExit):
        build("--judge-base-url", URL, "--judge-model", "j", "--judge-max-retries", "-1")
    assert "argument --judge-max-retries: got -1; allowed: a whole number from 0 to" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no endpoint flag"):
        add_endpoint_flags(parser, "x-", flags=("base-url", "temperature"))
