"""The one type of every output flag (``-o``, ``--out``, ``--out-dir``, ``--cache-dir``), checked while parsing.

An output path that cannot be written is the user's mistake, and it must show before the work: a
judge run that fails to write its report after an hour of judging has lost the hour. So the flag's
type refuses, with one ``error:`` line and exit 2 (argparse's own), an empty path (which ``Path``
reads as the current folder), a folder where a file is meant and a file where a folder is meant, a
name longer than the file system takes, a symbolic link to nothing, an existing file that is not a
regular file (a FIFO would hang the write after the work; a device would swallow it, or fail, as
``/dev/full`` does), and a place nothing can be written to: the nearest existing folder is probed by
creating, and at once removing, what the command would create there. Nothing is left behind by the
check. Missing folders above an output are created when it is written, and reports are written whole
(:mod:`pearl_verl.write_whole`).

Once the whole command line is parsed, :func:`clash` refuses two output flags naming one path (the second
write would replace the first: ``simulate --out s.json --summary s.json`` lost its per-turn file) and an output
that is an existing input of the same command (``view s.jsonl -o s.jsonl`` overwrote the dialogues it read).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pearl_verl.ranges import shown

_parsed: list[tuple[object, Path]] = []
"""(the value a flag's type returned, its path) for every output the command line being parsed names."""


def begin_parse() -> None:
    """Forget the outputs of an earlier command line (one process may parse several, as the tests do)."""
    _parsed.clear()


def clash(values: Mapping[str, Any], names: Mapping[str, str] = {}) -> str | None:  # noqa: B006 (read only)
    """What is wrong when two outputs of the parsed ``values`` (``vars(args)``) are one path, or an output is an
    existing file another argument names; None when nothing is. ``names``: how the command line spells each
    destination (``output`` -> ``-o/--output``, a positional as its name)."""
    flags = {id(value): names.get(name, "--" + name.replace("_", "-")) for name, value in values.items()}
    seen: dict[Path, object] = {}
    for value, path in _parsed:
        try:
            where = path.resolve()
        except (OSError, RuntimeError):  # a link loop: the write will name it; no clash to find here
            continue
        if where in seen:
            return (f"{_flag(flags, seen[where])} and {_flag(flags, value)} name one path, {shown(str(path), limit=None)}: "
                    "the second write would replace the first; give each output its own path.")
        seen[where] = value
    outputs = {id(value) for value, _ in _parsed}
    for value in values.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if id(item) in outputs or not isinstance(item, (str, os.PathLike)) or not str(item):
                continue
            where = _existing_file(item)
            if where in seen:
                return (f"{_flag(flags, seen[where])} {shown(str(item), limit=None)} is also the command's "
                        f"input ({_flag(flags, value)}): writing it would destroy what is read; write elsewhere.")
    return None


def _existing_file(item: str | os.PathLike) -> Path | None:
    """The resolved path of ``item`` when it names an existing file; None for anything else (any text a command
    takes: an override, a name too long for the file system)."""
    try:
        path = Path(item)
        return path.resolve() if path.is_file() else None
    except (OSError, ValueError):
        return None


def _flag(flags: Mapping[int, str], value: object) -> str:
    return flags.get(id(value), "an argument")


def output_file(text: str) -> Path:
    """A file the command will write (created with its folders, or overwritten / appended to)."""
    path = _nonempty(text, "a file")
    _check_name_lengths(path, text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} is a folder; give a file path.")
    _refuse_dangling(path, text, "a file path")
    if path.exists() and not path.is_file():
        # a FIFO blocks the write until someone reads, a device swallows it or fails after the work (/dev/full)
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} exists and is not a regular file (a pipe, "
                                         "device or socket); give a file path.")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} cannot be written (no permission).")
    _check_creatable(path.parent, text)
    _parsed.append((path, path))
    return path


def output_dir(text: str) -> Path:
    """A folder the command will write into (created when missing; an existing one is kept or resumed)."""
    path = _nonempty(text, "a folder")
    _check_name_lengths(path, text)
    _refuse_dangling(path, text, "a folder")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} is a file; give a folder.")
    _check_creatable(path, text)
    _parsed.append((path, path))
    return path


def output_dir_text(text: str) -> str:
    """:func:`output_dir` for a setting kept as text (a config dataclass's ``out_dir: str``)."""
    path = output_dir(text)
    _parsed[-1] = (text, path)
    return text


def _refuse_dangling(path: Path, text: str, wanted: str) -> None:
    if path.is_symlink() and not path.exists():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} is a symbolic link to nothing "
                                         f"({shown(os.readlink(path), limit=None)}); give {wanted}.")


def retype(parser: argparse.ArgumentParser, option: str, kind: type | object) -> None:
    """Give the flag ``option`` that :func:`~pearl_verl.config_flags.add_config_flags` added the type ``kind``."""
    for action in parser._actions:
        if option in action.option_strings:
            action.type = kind
            return
    raise ValueError(f"{parser.prog} has no flag {option}")


def _nonempty(text: str, what: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"the path is empty; give {what}.")
    return Path(text)


def _check_name_lengths(path: Path, text: str) -> None:
    """Each name in ``path`` fits the file system's limit (checked before any other look at the path: the system
    answers an over-long name with an error, not with "no such file")."""
    folder = Path(path.anchor or ".")
    for part in path.parts:
        candidate = folder / part
        try:
            if not candidate.is_dir():
                break
        except OSError:
            break
        folder = candidate
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            raise argparse.ArgumentTypeError(
                f"{shown(text, limit=80)}: the name {shown(part, limit=40)} is {size} bytes long; the file system "
                f"takes names of at most {limit}.")


def _check_creatable(folder: Path, text: str) -> None:
    """``folder`` exists and takes a new file, or can be created; nothing is left behind."""
    missing = []
    existing = folder.absolute()
    while not existing.exists():
        missing.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(
            f"{shown(text, limit=None)}: {shown(str(existing), limit=None)} is a file, not a folder.")
    try:
        if missing:
            missing[-1].mkdir()
            missing[-1].rmdir()
        else:
            with tempfile.TemporaryFile(dir=existing):
                pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(
            f"{shown(text, limit=None)} cannot be written: {shown(str(existing), limit=None)} takes no new file or "
            f"folder ({exc.strerror or exc}).") from None
