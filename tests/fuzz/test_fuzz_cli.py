"""Hostile input at every ``pearl-verl`` command, enumerated from the CLI's own parser.

Each Hypothesis example runs one command in process, from a scratch folder, with a few of its flags
set to hostile values (negative, zero, NaN, infinite, huge, empty, non-UTF-8, path-traversing,
key-shaped) and its positional arguments pointing at hostile files (not UTF-8, a directory, a
missing path, a line nested 100,000 deep, NaN scores, an empty file, random bytes named .parquet,
generated JSON lines). Output flags also get unusable paths (a FIFO, a link to nothing, a name over the
file system's limit), a path under folders that do not exist yet, one path shared by two output flags, and
the command's own input files. Endpoint flags get a server that echoes the key it was sent, in the forms a
server echoes it (as sent, URL-encoded, JSON-escaped, split by a line break), with the key's variable
given to the ``--*api-key-env`` flags. A new command or flag is fuzzed without editing this file. Properties:

- the exit status is 0, 1 or 2 (argparse's exits included) and no exception escapes;
- no traceback is printed (no ``-v`` here);
- a refusal (2) prints one ``error:`` line;
- no key-shaped value appears in anything printed;
- no part of the key the command took from the environment appears in anything printed or written;
- an unusable output path, two output flags naming one path, or an output that is also an input of the
  command is refused (2), and nothing is written through the FIFO or the link;
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
import json
import os
import signal
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl import cli
from pearl_verl.llm.local_server import LocalChatServer, Reply
from pearl_verl.out_paths import output_dir, output_dir_text, output_file

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
EXISTING_FILES = {"not-utf8", "nested", "nan-scores", "empty", "bytes.parquet", "generated", "secret", "dialogues"}
OUTPUT_KINDS = ("fifo", "dangling", "long-name", "new-folders", "shared")
"""Kinds of path an output flag may also name; :func:`_make_outputs` makes them."""
UNUSABLE_OUTPUTS = {"fifo", "dangling", "long-name"}
OUTPUT_TYPES = {output_file, output_dir, output_dir_text}

KEY_ENV = "PEARL_FUZZ_KEY"
KEY = "corr/ect+horse=battery-staple-77"
"""A key no shape rule takes for one: only its value, remembered where the command read it, keeps it out."""
ECHO_FORMS = {
    "as sent": lambda key: key,
    "url-encoded": lambda key: quote(key, safe=""),
    "form-encoded": lambda key: quote_plus(key),
    "json-escaped": lambda key: json.dumps(key)[1:-1].replace("/", "\\/"),
    "split by a line": lambda key: key[:9] + "\n  " + key[9:],
    "split, url-encoded": lambda key: quote(key[:12], safe="") + "\r\n" + quote(key[12:], safe=""),
}


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
    flag = action.option_strings[-1] if action.option_strings else ""
    if action.type in OUTPUT_TYPES:
        hostile = st.sampled_from([f"@{kind}" for kind in OUTPUT_KINDS]) | hostile
    if flag.endswith("api-key-env"):
        hostile = st.just(KEY_ENV) | hostile
    if flag.endswith("base-url"):
        hostile = st.just("@server") | hostile
    if action.choices:
        return st.sampled_from([str(c) for c in action.choices]) | hostile
    return hostile | text


def _endpoint(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    """The flags that send the command's ``prefix`` endpoint (``--judge-``, ``--student-``, ``--``) to the echo server
    with the key's variable: its URL, model, key and no retries, and the choice that selects it."""
    flags = {a.option_strings[-1]: a for a in _flags(parser)}
    argv = [f"{prefix}base-url", "@server"]
    for name, value in (("model", "m"), ("api-key-env", KEY_ENV), ("max-retries", "0"), ("parse-retries", "0")):
        if prefix + name in flags:
            argv += [prefix + name, value]
    for selector in (prefix + "backend", prefix.rstrip("-")):
        choices = flags[selector].choices or () if selector in flags else ()
        argv += next(([selector, c] for c in ("llm", "endpoint") if c in choices), [])
    return argv


@st.composite
def invocations(draw: st.DrawFn, path: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
    """(argv with ``@kind`` placeholders, the values given to output flags, the values given to the others)."""
    parser = COMMANDS[path]
    argv, outputs, others = list(path), [], []
    flags = _flags(parser)
    urls = [a.option_strings[-1] for a in flags if a.option_strings[-1].endswith("base-url")]
    prefixes = [flag.removesuffix("base-url") for flag in urls]
    if prefixes and draw(st.booleans()):  # an endpoint the command really calls, often enough to find a leak
        argv += _endpoint(parser, draw(st.sampled_from(prefixes)))
    for action in draw(st.lists(st.sampled_from(flags), max_size=3, unique_by=id)) if flags else []:
        argv.append(action.option_strings[-1])
        if action.nargs != 0:
            argv.append(draw(_value(action)))
            (outputs if action.type in OUTPUT_TYPES else others).append(argv[-1])
    for action in _positionals(parser):
        count = action.nargs if isinstance(action.nargs, int) else draw(st.integers(0, 1)) \
            if action.nargs in ("*", "?") else 1
        inputs = st.sampled_from([f"@{kind}" for kind in FILE_KINDS]) | st.sampled_from(["@dialogues", "@fixture"])
        given = [draw(inputs | _value(action)) for _ in range(count)]
        argv += given
        others += given
    return argv, outputs, others


json_lines = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["id", "uid", "episode", "turns", "question", "answer", "score", "step", "judge", "acc", "problem", "text"]
    ), inner, max_size=5),
    max_leaves=12,
)


def _write_inputs(folder: Path, generated: list[object], episode: dict) -> dict[str, Path]:
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
    paths["dialogues"] = folder / "dialogues.jsonl"  # read by the commands that judge or view dialogues
    paths["dialogues"].write_text(json.dumps({"row_kind": "dialogue", "row_version": 1, "id": "d0",
                                              "episode": episode}) + "\n")
    return paths


def _make_outputs(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    paths = {kind: folder / f"{kind}.json" for kind in OUTPUT_KINDS}
    os.mkfifo(paths["fifo"])
    paths["dangling"].symlink_to(folder / "nothing.json")
    paths["long-name"] = folder / ("n" * 300)
    paths["new-folders"] = folder / "new" / "deeper" / "out.json"
    return paths


def _untouched_specials(paths: dict[str, Path]) -> bool:
    """Nothing was written through the FIFO or the dangling link (nor was either replaced)."""
    return (stat.S_ISFIFO(paths["fifo"].lstat().st_mode) and paths["dangling"].is_symlink()
            and not paths["dangling"].exists())


def _leaked(text: str) -> bool:
    """Whether ``text`` holds 8 characters in a row of the key, or of its URL-encoded form."""
    return any(form[i:i + 8] in text for form in (KEY, quote(KEY, safe="")) for i in range(len(form) - 7))


def _written(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*")
                     if p.is_file() and not p.is_symlink() and "inputs" not in p.relative_to(root).parts)


@pytest.fixture(scope="module")
def echo_server():
    """A chat server that answers every request with the key it was sent, in the example's form: in a 401's message
    (an error a client gives up on at once) or in a reply's content (which a command may keep in its results)."""
    echo = {"form": "as sent", "status": 401}

    def respond(_body):
        sent = (server.headers[-1].get("Authorization") or "").removeprefix("Bearer ")
        said = f"the key {ECHO_FORMS[echo['form']](sent)} was given"
        return Reply(status=401, error_message=said) if echo["status"] == 401 else said

    with LocalChatServer(respond) as server:
        yield server, echo


@pytest.fixture(scope="module", autouse=True)
def key_in_the_environment():
    os.environ[KEY_ENV] = KEY
    yield
    del os.environ[KEY_ENV]


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
@given(data=st.data(), generated=st.lists(json_lines, max_size=4), form=st.sampled_from(sorted(ECHO_FORMS)),
       status=st.sampled_from([401, 200]))
def test_every_command_holds_against_hostile_input(path, data, generated, form, status, capsys, no_endless_work,
                                                   echo_server, make_episode):
    argv, outputs, others = data.draw(invocations(path), label="argv")
    server, echo = echo_server
    echo.update(form=form, status=status)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        inputs = _write_inputs(root / "inputs", generated, make_episode(["help", "What is 3 x 4?", "12"]).to_dict())
        places = {**inputs, **_make_outputs(root / "outputs"), "server": server.base_url}
        argv = [str(places[a[1:]]) if a.startswith("@") and a[1:] in places else a for a in argv]
        work = root / "work" / "a" / "b"  # '../../../outside', a path a flag may name, stays inside root
        work.mkdir(parents=True)
        before = _snapshot(root / "inputs")
        with contextlib.chdir(work):
            code, printed = _run(argv, capsys)
        assert code in (0, 1, 2, "work"), (argv, code, printed[-2000:])
        refused = (UNUSABLE_OUTPUTS & {o[1:] for o in outputs} or outputs.count("@shared") > 1
                   or any(o[1:] in EXISTING_FILES and o in others for o in outputs))
        assert code == 2 or not refused, (argv, code, printed[-2000:])
        assert _untouched_specials(places), argv
        assert not _leaked(printed) and not _leaked(_written(root)), (argv, form, status, printed[-2000:])
        assert "Traceback" not in printed, (argv, printed[-3000:])
        if code == 2:
            errors = [line for line in printed.splitlines() if "error:" in line]
            assert len(errors) == 1, (argv, printed[-2000:])
        assert not any(SECRET_TAIL[i:i + 8] in printed for i in range(len(SECRET_TAIL) - 7)), (argv, printed[-2000:])
        assert _snapshot(root / "inputs") == before, argv
        assert {p.name for p in root.iterdir()} <= {"inputs", "outputs", "work", "outside"}, argv


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
