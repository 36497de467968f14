"""The one type of every output flag (``-o``, ``--out``, ``--out-dir``, ``--cache-dir``), checked while parsing.

An output path that cannot be written is the user's mistake, and it must show before the work: a
judge run that fails to write its report after an hour of judging has lost the hour. So the flag's
type refuses, with one ``error:`` line and exit 2 (argparse's own), an empty path (which ``Path``
reads as the current folder), a folder where a file is meant and a file where a folder is meant,
and a place nothing can be written to: the nearest existing folder is probed by creating, and at
once removing, what the command would create there. Nothing is left behind by the check.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from pearl_verl.ranges import shown


def output_file(text: str) -> Path:
    """A file the command will write (created with its folders, or overwritten / appended to)."""
    path = _nonempty(text, "a file")
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} is a folder; give a file path.")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} cannot be written (no permission).")
    _check_creatable(path.parent, text)
    return path


def output_page(text: str) -> Path:
    """:func:`output_file` that must be a regular file of its own (a page read back later, not ``/dev/null``)."""
    path = output_file(text)
    if path.exists() and not path.is_file():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} exists and is not a regular file; give a file path.")
    return path


def output_dir(text: str) -> Path:
    """A folder the command will write into (created when missing; an existing one is kept or resumed)."""
    path = _nonempty(text, "a folder")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{shown(text, limit=None)} is a file; give a folder.")
    _check_creatable(path, text)
    return path


def output_dir_text(text: str) -> str:
    """:func:`output_dir` for a setting kept as text (a config dataclass's ``out_dir: str``)."""
    output_dir(text)
    return text


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
