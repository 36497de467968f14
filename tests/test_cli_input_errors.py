"""Every command that reads a file answers a bad one with one located ``error:`` line and exit 2.

A missing path, a directory, bytes that are not UTF-8, a line that is not JSON, a JSON value that
is not an object and an object of the wrong kind each get ``error: FILE[:LINE]: ...`` on stderr
and exit status 2; the traceback appears only under ``-v``. Only the project's own InputError is
reported that way: any other exception (a library's ValueError included) is a bug and propagates.
"""

import argparse
import json
import sys

import pytest

from pearl_verl import cli
from pearl_verl.errors import InputError

# {F}: the bad input; {O}: a scratch folder for outputs.
COMMANDS = {
    "advantage": "advantage {F}",
    "simulate": "simulate {F} --limit 1",
    "decompose": "decompose {F} --cache-dir {O}/cache",
    "judge-sft-data": "judge-sft-data {F} -o {O}/x.parquet",
    "eval-tutor": "eval-tutor {F} --out {O}/run --tutor name=s,scripted=socratic --judge none --limit 1 --progress off",
    "eval-simulator": "eval-simulator {F} --out {O}/sim --annotator planned --progress off",
    "eval-rm": "eval-rm {F} --out {O}/rm --rm judge --judge offline",
    "eval-rm --make-pairs": "eval-rm --make-pairs {F} --pair-tutors a,b --pairs-out {O}/p.jsonl",
    "eval-mathdial": "eval-mathdial --results {F} --out {O}/md",
    "compare build-pairs": "compare build-pairs {F} --out {O}/pairs.jsonl",
    "prepare-data": "prepare-data gsm8k={F} -o {O}/prep",
}
# kind: (file content, or None for no file, "DIR" for a directory; the line the error must name)
KINDS = {
    "missing": (None, None),
    "directory": ("DIR", None),
    "not-utf8": (b'\n\xff\xfe\x00 bad\n', 2),
    "not-json": (b'\n\n{"question": oops\n', 3),
    "not-an-object": (b"[1, 2, 3]\n", 1),
    "wrong-record": (b'{"id": "x", "question": 5, "episode": 3, "uid": 1}\n', 1),
    "number-question": (b'{"question": 12345, "answer": "He has 7.\\n#### 7"}\n', 1),
    "huge-question": (json.dumps({"question": "x" * 25_000, "answer": "He has 7.\n#### 7"}).encode() + b"\n", 1),
}


def _bad_input(tmp_path, kind):
    content, line = KINDS[kind]
    path = tmp_path / "in.jsonl"
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    return path, line


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_bad_input_is_one_located_error_line(tmp_path, capsys, command, kind):
    path, line = _bad_input(tmp_path, kind)
    argv = COMMANDS[command].format(F=path, O=tmp_path).split()
    assert cli.main(argv) == 2
    err = [text for text in capsys.readouterr().err.splitlines() if text.strip()]
    assert len(err) == 1 and "Traceback" not in err[0], err
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert err[0].startswith(f"error: {where}"), err[0]
    if command == "eval-tutor":  # a failed start leaves no report of a run that did not happen
        assert not (tmp_path / "run" / "report.md").exists()


def test_judge_flags_bad_lines_and_refuses_bad_paths(tmp_path, capsys):
    for kind in ("missing", "directory"):
        (tmp_path / kind).mkdir()
        path, _ = _bad_input(tmp_path / kind, kind)
        assert cli.main(["judge", str(path), "-o", str(tmp_path / "j.jsonl"), "--backend", "offline"]) == 2
        assert capsys.readouterr().err.startswith(f"error: {path}: dialogue file ")
    path = tmp_path / "dialogues.jsonl"
    path.write_bytes(b'\n\xff\xfe bad\n[1]\n')
    # Bad lines are flagged in the output (one bad line must not stop a batch); all failed -> exit 1.
    assert cli.main(["judge", str(path), "-o", str(tmp_path / "j.jsonl"), "--backend", "offline"]) == 1
    rows = [json.loads(text) for text in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert [(r["line"], r["judge_ok"]) for r in rows] == [(2, 0), (3, 0)]
    assert rows[0]["error"].startswith("not UTF-8 text") and "got list" in rows[1]["error"]


def test_gen_sft_names_a_file_that_is_not_parquet(tmp_path, capsys):
    path = tmp_path / "rows.parquet"
    path.write_text('{"not": "parquet"}\n')
    assert cli.main(["gen-sft", str(path), "-o", str(tmp_path / "gen"), "--teacher", "scripted", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: is not a readable parquet file")


@pytest.mark.parametrize(("argv", "message"), [
    ("gen-sft {P} -o {O}/gen --val-fraction 1", "argument --val-fraction: got 1; allowed: a finite number at least 0 "
     "and less than 1 (0: no validation split)"),
    ("simulate {P} --concurrency 0", "argument --concurrency: got 0; allowed: a whole number from 1 to"),
    ("eval-mtb --out {O}/mtb --concurrency -2", "argument --concurrency: got -2; allowed: a whole number from 1 to"),
])
def test_a_number_flag_is_refused_while_parsing_by_its_declared_range(tmp_path, capsys, argv, message):
    argv = argv.format(P=tmp_path / "rows.parquet", O=tmp_path).split()
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert exited.value.code == 2 and len(errors) == 1 and message in errors[0], errors
    assert not list(tmp_path.iterdir())  # nothing was read or written


def test_verbose_adds_the_traceback(tmp_path, capsys):
    path, _ = _bad_input(tmp_path, "not-json")
    assert cli.main(["-v", "simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.rstrip().splitlines()[-1].startswith(f"error: {path}:3: ")


def _one_command(handler):
    """A fake command module whose handler is ``handler``: cli.main over it alone."""

    class Module:
        @staticmethod
        def register(sub: argparse._SubParsersAction) -> None:
            sub.add_parser("boom").set_defaults(handler=handler)

    return Module


@pytest.mark.parametrize("verbose", [False, True])
def test_only_the_projects_input_error_is_a_user_error(monkeypatch, capsys, verbose):
    def library_bug(args):
        import numpy as np

        return np.arange(2).reshape(3)  # numpy's own ValueError: a bug of ours, not the user's input

    def user_mistake(args):
        raise InputError("data.jsonl:4: question: missing")

    monkeypatch.setitem(sys.modules, "fake_bug", _one_command(library_bug))
    monkeypatch.setitem(sys.modules, "fake_user", _one_command(user_mistake))
    flags = ["-v"] if verbose else []
    with pytest.raises(ValueError, match="cannot reshape") as raised:
        cli.main([*flags, "boom"], modules=["fake_bug"])
    assert not isinstance(raised.value, InputError)
    assert cli.main([*flags, "boom"], modules=["fake_user"]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().splitlines()[-1] == "error: data.jsonl:4: question: missing"
    assert ("Traceback" in err) is verbose
