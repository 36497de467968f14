"""Files commands read: JSONL they append to as they go, and users' input files, read back strictly.

Every long command (``judge``, ``gen-sft``, ``eval-tutor``) appends one line per finished item and
resumes from what the file holds; input files are read all-or-nothing with the offending line
named (``FILE:LINE: what is wrong``), and a path that is missing or a directory is one such error,
not an OSError traceback.

A writer appends each record as ``json + "\\n"``, so a kill can damage only the last line, and a
damaged last line has no newline. That line alone is forgiven (:func:`read_appended` skips it,
:func:`drop_cut_tail` removes it before the next append); a bad line anywhere else is damage a
resume cannot explain or repair, and is an error naming the file and line.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pearl_verl.errors import InputError, located
from pearl_verl.redact import redact_remembered

T = TypeVar("T")

logger = logging.getLogger(__name__)

_BLOCK = 1 << 16  # bytes read per step when looking backwards for the last newline

TOO_DEEP = "JSON nested too deeply to read"
"""Why a line like ``[[[[...`` is refused: json.loads would exhaust the interpreter's stack (RecursionError)."""


def json_line(value: Any, **dumps: Any) -> str:
    """``value`` as one line of a JSONL file (``json.dumps`` with ``dumps``), every remembered API key redacted: a
    reply that echoes the key, kept in a result row, must not carry it into the file."""
    return redact_remembered(json.dumps(value, **dumps)) + "\n"


def end_with_newline(path: Path) -> None:
    """Terminate a last line cut short by a kill, so appended lines start on their own line.

    The cut line stays, in the middle of the file from then on: only for files whose reader skips
    any unreadable line. Files read with :func:`read_appended` use :func:`drop_cut_tail` instead.
    """
    if path.exists() and path.stat().st_size:
        with path.open("rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")


def read_appended(path: Path) -> Iterator[tuple[int, Any]]:
    """(1-based line number, JSON value) of each non-blank line of a file commands append to.

    A last line without a newline that is not UTF-8 JSON is a write a kill cut short: it is
    skipped with one warning (its item is redone on resume).

    Raises:
        InputError: ``FILE:LINE: ...`` for any other line that is not UTF-8 JSON, including a
            last line that ends in a newline (the writer finished it, so something else broke it).
    """
    for number, raw in _nonblank_lines(path):
        try:
            value = parse_line(raw)
        except ValueError as exc:
            if raw.endswith(b"\n"):
                raise InputError(
                    f"{path}:{number}: {exc}; only a last line cut short by a kill is skipped, "
                    "so repair or delete this one."
                ) from None
            logger.warning("%s:%d: the last line is cut off (a kill during a write?); ignored", path, number)
            continue
        yield number, value


def _nonblank_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield number, raw


def drop_cut_tail(path: Path) -> bool:
    """Put ``path`` on a line boundary before appending to it; True when a cut-short line was removed.

    A last line without a newline that parses lost only its newline to the kill: it is kept and
    terminated. One that does not parse is half a record: it is removed, since a newline would
    leave it in the middle of the file, where :func:`read_appended` rejects it.
    """
    if not path.exists():
        return False
    with path.open("rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return False
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return False
        start = _last_line_start(handle, end)
        handle.seek(start)
        tail = handle.read()
        if not tail.strip() or _parses(tail):
            handle.write(b"\n")
            return False
        handle.truncate(start)
        return True


def parse_line(raw: bytes) -> Any:
    """One line as JSON; InputError with a short reason (decoding first names bad UTF-8 as such)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start + 1})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:  # "[[[[..." deeper than the interpreter's stack: a bad line, not a crash
        raise InputError(TOO_DEEP) from None


def input_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a Path when it names a readable file.

    Raises:
        InputError: ``FILE: <what> does not exist`` / ``is a directory``, so a wrong path reads as
            one line rather than an OSError traceback.
    """
    path = Path(path)
    try:
        is_dir, is_file, exists = path.is_dir(), path.is_file(), path.exists()
    except OSError as exc:  # a name too long, or other that no file system can hold
        raise located(path, None, f"{what}: not a usable path ({exc.strerror}).") from None
    if is_dir:
        raise located(path, None, f"{what} is a directory; give the file itself.")
    if exists and not is_file:  # /dev/null, a pipe, a socket: read as nothing, or never ending
        raise located(path, None, f"{what} is not a regular file; give a file.")
    if not is_file:
        raise located(path, None, f"{what} does not exist.")
    return path


def read_text(path: str | os.PathLike, what: str) -> str:
    """A user's UTF-8 text file (a prompt, an instruction), whole.

    Raises:
        InputError: for a missing path, a directory, or bytes that are not UTF-8 (line named).
    """
    raw = input_file(path, what).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise located(path, line, f"not UTF-8 text (byte {exc.start + 1} of the file).") from None


def read_json(path: str | os.PathLike, what: str) -> Any:
    """A user's JSON file (a curriculum, a data set), whole.

    Raises:
        InputError: as :func:`read_text`, and ``FILE:LINE: not valid JSON (...)``.
    """
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise located(path, exc.lineno, f"not valid JSON ({exc.msg} at column {exc.colno}).") from None
    except RecursionError:
        raise located(path, None, f"{TOO_DEEP}.") from None


def read_objects(
    path: str | os.PathLike, what: str, on_bad: Callable[[InputError], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of each non-blank line of a JSONL input file, strictly.

    Args:
        on_bad: for a reader that shows what it can (``pearl-verl view``): each bad line's
            ``FILE:LINE: ...`` error is passed to it and the line skipped, instead of raised.

    Raises:
        InputError: for a missing path or a directory, and ``FILE:LINE: ...`` for the first line
            that is not UTF-8, not JSON, or not a JSON object (unless ``on_bad`` is given).
    """
    path = input_file(path, what)
    for number, raw in _nonblank_lines(path):
        try:
            value = parse_line(raw)
            if not isinstance(value, dict):
                raise InputError(f"expected a JSON object ({what}), got {type(value).__name__}.")
        except InputError as exc:
            error = located(path, number, str(exc))
            if on_bad is None:
                raise error from None
            on_bad(error)
            continue
        yield number, value


def _parses(raw: bytes) -> bool:
    try:
        parse_line(raw)
    except ValueError:
        return False
    return True


def _last_line_start(handle: Any, end: int) -> int:
    """Offset just after the last newline before ``end`` (0 when there is none)."""
    # Read backwards in blocks: a results file can be large, while its last line is short.
    pos = end
    while pos > 0:
        step = min(_BLOCK, pos)
        pos -= step
        handle.seek(pos)
        cut = handle.read(step).rfind(b"\n")
        if cut >= 0:
            return pos + cut + 1
    return 0


def read_unique_records(
    path: Path, parse: Callable[[dict[str, Any], int], T], key: Callable[[T], str], kind: str, id_label: str = "id"
) -> list[T]:
    """Every object line of ``path`` (:func:`read_objects`) through ``parse(object, line_number)``, ids unique.

    Raises:
        InputError: naming the file and line, for a line :func:`read_objects` or ``parse`` rejects
            (``parse`` may raise KeyError, TypeError or ValueError for a missing or malformed
            field) or an id seen before; or when the file holds no record.
    """
    records: list[T] = []
    seen: set[str] = set()
    for number, value in read_objects(path, f"{kind} file"):
        try:
            record = parse(value, number)
        except KeyError as exc:
            raise located(path, number, f"not a {kind}: no field {exc}.") from exc
        except (TypeError, ValueError) as exc:
            raise located(path, number, f"not a {kind}: {exc}") from exc
        record_id = key(record)
        if record_id in seen:
            raise located(path, number, f"{id_label} {record_id!r} appears twice.")
        seen.add(record_id)
        records.append(record)
    if not records:
        raise located(path, None, f"holds no {kind}s.")
    return records
