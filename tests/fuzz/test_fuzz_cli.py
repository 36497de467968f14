"""Hostile input at every ``pearl-verl`` command, enumerated from the CLI's own parser.

Each Hypothesis example runs one command in process, from a scratch folder, with a few of its flags
set to hostile values (negative, zero, NaN, infinite, huge, empty, non-UTF-8, path-traversing,
key-shaped) and its positional arguments pointing at hostile files (not UTF-8, a directory, a
missing path, a line nested 100,000 deep, NaN scores, an empty file, random bytes named .parquet,
generated JSON lines). A new command or flag is fuzzed without editing this file. Properties:

- the exit status is 0, 1 or 2 (argparse's exits included) and no exception escapes;
- no traceback is printed (no ``-v`` here);
- a refusal (2) prints one ``error:`` line;
- no key-shaped value appears in anything printed;
- no input file is changed and nothing is written outside the scratch folder;
- every run ends within :data:`BOUND_S` (the inputs are a few KB).

Work that runs until stopped on valid input (training, the study and page servers) is replaced by a
marker exception once the command has accepted its input: reaching it is a pass. The doctor's probes
of verl's trainer and of verl's vLLM rollout (fresh processes importing verl, and vLLM, 10-15 s each)
answer at once: they read no input, and ``tests/verl_plugin/test_doctor_on_cpu.py`` runs them for real.

``PEARL_FUZZ=long`` runs :data:`LONG_EXAMPLES` examples per command instead of a few (BENCHMARKS.md
records what the long profile found).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl import cli

LONG = os.environ.get("PEARL_FUZZ") == "long"
LONG_EXAMPLES = 150
EXAMPLES = LONG_EXAMPLES if LONG else 20
BOUND_S = 120
SECRET_TAIL = "Zq8vR2mXw4KpT7nLc9YbH3sJf6GdQ1aE"
SECRET = "sk-proj-" + SECRET_TAIL

HOSTILE_VALUES = (
    "-1", "0", "-0.5", "nan", "inf", "-inf", "1e309", "2.5", "99999999999999999999", "", " ", "null", "[]", "{}",
    SECRET, f"Bearer {SECRET}", f"OPENAI_API_KEY={SECRET}", "../../../outside", "/", "/dev/null", "\udcff",
    "é", "a,b=c,=", "x=1", "☃" * 200, "--", "-", "1,2,3", "127.0.0.1:99999",
)
"""Values a user (or a broken script) passes to a flag."""

FILE_KINDS = ("not-utf8", "dir", "missing", "nested", "nan-scores", "empty", "bytes.parquet", "generated", "secret")
"""Kinds of file a positional argument (or a path flag) may name; :func:`_write_inputs` makes them."""


class ReachedWork(BaseException):
    """A command accepted its input and would now train or serve until stopped (BaseException: no
    ``except Exception`` of the command can swallow it)."""


def _commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found.append((path, parser))
        for action in subs:
            for name, sub in action.choices.items():
                walk((*path, name), sub)

    walk((), cli.build_parser())
    return [(path, parser) for path, parser in found if path]


COMMANDS = dict(_commands())


def _flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction | argparse._VersionAction)]


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings]


def _value(action: argparse.Action) -> st.SearchStrategy[str]:
    hostile = st.sampled_from(HOSTILE_VALUES) | st.sampled_from([f"@{kind}" for kind in FILE_KINDS])
    text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
    if action.choices:
        return st.sampled_from([str(c) for c in action.choices]) | hostile
    return hostile | text


@st.composite
def invocations(draw: st.DrawFn, path: tuple[str, ...]) -> list[str]:
    parser = COMMANDS[path]
    argv = list(path)
    flags = _flags(parser)
    for action in draw(st.lists(st.sampled_from(flags), max_size=3, unique_by=id)) if flags else []:
        argv.append(action.option_strings[-1])
        if action.nargs != 0:
            argv.append(draw(_value(action)))
    for action in _positionals(parser):
        count = action.nargs if isinstance(action.nargs, int) else draw(st.integers(0, 1)) \
            if action.nargs in ("*", "?") else 1
        argv += [draw(st.sampled_from([f"@{kind}" for kind in FILE_KINDS]) | _value(action)) for _ in range(count)]
    return argv


json_lines = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["id", "uid", "episode", "turns", "question", "answer", "score", "step", "judge", "acc", "problem", "text"]
    ), inner, max_size=5),
    max_leaves=12,
)


def _write_inputs(folder: Path, generated: list[object]) -> dict[str, Path]:
    import json

    folder.mkdir()
    paths = {kind: folder / f"{kind}.jsonl" for kind in FILE_KINDS}
    paths["not-utf8"].write_bytes(b'{"id": "a"}\n\xff\xfe\x00 broken\n')
    paths["dir"].mkdir()
    paths["nested"].write_text("[" * 100_000 + "]" * 100_000 + "\n")
    paths["nan-scores"].write_text('{"uid": "g", "acc": NaN, "score": Infinity, "judge_ok": 1, "step": 1}\n')
    paths["empty"].write_text("")
    paths["bytes.parquet"] = folder / "bytes.parquet"
    paths["bytes.parquet"].write_bytes(b"PAR1" + bytes(range(256)) + b"PAR1")
    paths["generated"].write_text("".join(json.dumps(row, default=str) + "\n" for row in generated))
    paths["secret"].write_text(json.dumps({"api_key_env": SECRET, "base_url": f"http://x/{SECRET}"}) + "\n")
    return paths


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


@contextlib.contextmanager
def _bounded(seconds: int, argv: list[str]) -> Iterator[None]:
    def expire(signum, frame):
        raise ReachedWork(f"still running after {seconds} s: {argv}")  # reported as a failure below

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def no_endless_work(monkeypatch):
    """Training, fitting and servers raise :class:`ReachedWork` instead of running until stopped or done; the
    doctor's trainer and vLLM probes answer at once."""

    def reached(*args, **kwargs):
        raise ReachedWork("reached the work")

    import uvicorn

    from pearl_verl.judge.fitted import fit
    from pearl_verl.train_local import train
    from pearl_verl.verl_plugin import doctor
    from pearl_verl.view import view_cli

    monkeypatch.setattr(doctor, "check_cpu_trainer",
                        lambda *args, **kwargs: doctor.Check("verl's trainer on this CPU", True, "not probed here"))
    # a fresh process importing verl and vLLM, ~15 s an example; test_doctor_on_cpu.py runs it for real
    monkeypatch.setattr(doctor, "check_cpu_vllm",
                        lambda *args, **kwargs: doctor.Check("verl's vLLM rollout on this CPU", True, "not probed here"))
    monkeypatch.setattr(train, "run_training", reached)
    # judge-fit on a valid label file: minutes of fitting, measured for real in tests/judge/test_fitted_judge.py
    monkeypatch.setattr(fit, "cross_validate", reached)
    monkeypatch.setattr(fit, "fit_params", reached)
    monkeypatch.setattr(view_cli, "serve", reached)
    monkeypatch.setattr(uvicorn.Server, "run", reached)  # compare serve, once its socket is bound


def _run(argv: list[str], capsys) -> tuple[int | str, str]:
    capsys.readouterr()
    try:
        with _bounded(BOUND_S, argv):
            code: int | str = cli.main(argv)
    except SystemExit as exc:  # argparse's usage errors (2) and --help (0)
        code = exc.code if isinstance(exc.code, int) else 1
    except ReachedWork as exc:
        code = "work" if str(exc) == "reached the work" else str(exc)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(data=st.data(), generated=st.lists(json_lines, max_size=4))
def test_every_command_holds_against_hostile_input(path, data, generated, capsys, no_endless_work):
    argv = data.draw(invocations(path), label="argv")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        inputs = _write_inputs(root / "inputs", generated)
        argv = [str(inputs[a[1:]]) if a.startswith("@") and a[1:] in inputs else a for a in argv]
        work = root / "work" / "a" / "b"  # '../../../outside', a path a flag may name, stays inside root
        work.mkdir(parents=True)
        before = _snapshot(root / "inputs")
        with contextlib.chdir(work):
            code, printed = _run(argv, capsys)
        assert code in (0, 1, 2, "work"), (argv, code, printed[-2000:])
        assert "Traceback" not in printed, (argv, printed[-3000:])
        if code == 2:
            errors = [line for line in printed.splitlines() if "error:" in line]
            assert len(errors) == 1, (argv, printed[-2000:])
        assert not any(SECRET_TAIL[i:i + 8] in printed for i in range(len(SECRET_TAIL) - 7)), (argv, printed[-2000:])
        assert _snapshot(root / "inputs") == before, argv
        assert {p.name for p in root.iterdir()} <= {"inputs", "work", "outside"}, argv


def test_the_commands_are_found_from_the_parser():
    assert {"judge", "view", "train-local", "plan", "doctor"} <= {path[0] for path in COMMANDS}
    assert ("compare", "serve") in COMMANDS and ("compare", "build-pairs") in COMMANDS


@pytest.fixture(scope="module", autouse=True)
def the_checkout_is_untouched():
    """Nothing the fuzzed commands did lands in the repository (they ran in scratch folders)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]

    def status() -> str:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                              capture_output=True, text=True, check=False).stdout

    before = status()
    yield
    assert status() == before
