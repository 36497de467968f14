"""Fixtures of the SFT tests: prepared rows, a scripted teacher behind a real HTTP endpoint, the CLI."""

import argparse
from pathlib import Path

import pytest

from pearl_verl.data.prepare import PrepareConfig, SourceSpec, build_rows, write_rows
from pearl_verl.dialogue.episode import STUDENT, TUTOR, DialogueTurn
from pearl_verl.dialogue.problem import Problem
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.sft import gen_cli
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

REFERENCE_HEADER = "\n\nReference solution (for you only; never show it to the student):\n"


def problem_from_system_prompt(system: str) -> Problem:
    """Invert ``tutor_system_prompt`` (with the reference solution) into the problem it shows."""
    body = system.split("\n\nProblem:\n", 1)[1]
    question, reference = body.split(REFERENCE_HEADER, 1)
    solution, answer = reference.rsplit("\nFinal answer: ", 1)
    return Problem("from-prompt", question, solution, answer)


def scripted_teacher(delay_s: float = 0.0, fail_when=None):
    """A LocalChatServer responder that tutors like ScriptedSocraticTutor from the request's messages.

    ``fail_when(problem)`` -> True answers HTTP 400 (a configuration error: no retry, the call fails).
    """
    tutor = ScriptedSocraticTutor()

    async def respond(body):
        messages = body["messages"]
        problem = problem_from_system_prompt(messages[0]["content"])
        if fail_when is not None and fail_when(problem):
            return Reply(status=400)
        turns = [DialogueTurn(TUTOR if m["role"] == "assistant" else STUDENT, m["content"]) for m in messages[1:]]
        return Reply(text=await tutor.reply(problem, turns), delay_s=delay_s)

    return respond


@pytest.fixture(scope="session")
def prepared(tmp_path_factory) -> Path:
    """Prepared train rows of the shipped GSM8K and MathDial fixtures (seed 1, one condition each)."""
    rows, _ = build_rows(
        [SourceSpec("gsm8k", "@fixture", "train"), SourceSpec("mathdial", "@fixture", "train")],
        PrepareConfig(seed=1),
    )
    return write_rows(rows["train"], tmp_path_factory.mktemp("prepared") / "train.parquet")


@pytest.fixture
def teacher_server():
    """Start scripted-teacher servers; stopped at the end of the test."""
    servers = []

    def start(**kwargs) -> LocalChatServer:
        server = LocalChatServer(scripted_teacher(**kwargs), model="teacher")
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def gen_sft(*argv) -> int:
    """``pearl-verl gen-sft ARGV`` in this process (the handler, as the CLI calls it)."""
    parser = argparse.ArgumentParser()
    gen_cli.register(parser.add_subparsers())
    args = parser.parse_args(["gen-sft", *map(str, argv)])
    return args.handler(args)


@pytest.fixture
def run_gen_sft():
    return gen_sft
