"""Every output flag of every command refuses an unusable path while parsing: one error line, exit 2.

The flags are found by walking the parser ``pearl-verl`` builds (any ``-o``/``--out``/``--out-dir``/
``--output``/``--cache-dir``/``--summary``/``--val-output``/``--export``/``--pairs-out``), so a new one is
covered without editing this file, and it must use the one output-path type of :mod:`pearl_verl.out_paths`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pearl_verl import cli
from pearl_verl.out_paths import output_dir, output_dir_text, output_file

NAMES = ("-o", "--out", "--out-dir", "--output", "--cache-dir", "--summary", "--val-output", "--export", "--pairs-out")


def _output_flags():
    found = []
    for path, parser in cli.command_parsers(cli.build_parser()):
        for action in parser._actions:
            if set(action.option_strings) & set(NAMES):
                found.append((path, action.option_strings[-1], action.type))
    return found


FLAGS = _output_flags()
FILE_TYPES, DIR_TYPES = {output_file}, {output_dir, output_dir_text}


def test_every_output_flag_has_the_output_path_type():
    assert len(FLAGS) >= 16
    untyped = [(" ".join(path), flag) for path, flag, kind in FLAGS if kind not in FILE_TYPES | DIR_TYPES]
    assert untyped == []


def _bad_paths(tmp_path: Path, kind) -> dict[str, tuple[str, str]]:
    """name -> (path given, what the error says)."""
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("x")
    bad = {
        "empty": ("", "the path is empty"),
        "blank": ("  ", "the path is empty"),
        "under a file": (str(a_file / "x"), "is a file, not a folder"),
        "nowhere to create": ("/proc/pearl-nope/x", "takes no new file or folder"),
    }
    long_name = "n" * 300
    bad["a name over the file system's limit"] = (str(tmp_path / long_name / "x"), "bytes long; the file system takes")
    if kind in FILE_TYPES:
        bad["a folder"] = (str(tmp_path), "is a folder; give a file path")
        bad["trailing slash"] = (str(tmp_path / "new") + "/", "is a folder; give a file path")
        bad["an over-long file name"] = (str(tmp_path / long_name), "bytes long; the file system takes")
        dangling = tmp_path / "dangling.json"
        dangling.symlink_to(tmp_path / "no-such-target.json")
        bad["a dangling link"] = (str(dangling), "is a symbolic link to nothing")
        fifo = tmp_path / "a-fifo"
        os.mkfifo(fifo)
        bad["a FIFO"] = (str(fifo), "is not a regular file")
        bad["a device"] = ("/dev/full", "is not a regular file")
    else:
        bad["a file"] = (str(a_file), "is a file; give a folder")
        dangling = tmp_path / "dangling-folder"
        dangling.symlink_to(tmp_path / "no-such-folder")
        bad["a dangling link"] = (str(dangling), "is a symbolic link to nothing")
    return bad


@pytest.mark.parametrize(("path", "flag", "kind"), FLAGS, ids=[f"{' '.join(p)} {f}" for p, f, _ in FLAGS])
def test_an_unusable_output_path_is_refused_while_parsing(tmp_path, capsys, path, flag, kind):
    for name, (given, says) in _bad_paths(tmp_path, kind).items():
        before = sorted(tmp_path.rglob("*"))
        with pytest.raises(SystemExit) as exit_info:
            cli.main([*path, flag, given, "--help-is-not-reached"])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2, name
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"pearl-verl {' '.join(path)}: error: argument ") and says in line, (name, err)
        assert "Traceback" not in err
        assert sorted(tmp_path.rglob("*")) == before  # the check created nothing


def test_a_usable_output_path_is_taken_and_nothing_is_created(tmp_path):
    assert output_file(str(tmp_path / "new" / "deeper" / "r.json")) == tmp_path / "new" / "deeper" / "r.json"
    assert output_dir(str(tmp_path / "run")) == tmp_path / "run"
    assert output_dir(str(tmp_path)) == tmp_path  # an existing folder: resumed
    assert list(tmp_path.iterdir()) == []
