"""JSONL files that commands append to as they go and read back strictly.

Every long command (``judge``, ``gen-sft``, ``eval-tutor``) appends one line per finished item and
resumes from what the file holds; input files of pairs are read all-or-nothing with the offending
line named.

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

T = TypeVar("T")

logger = logging.getLogger(__name__)

_BLOCK = 1 << 16  # bytes read per step when looking backwards for the last newline


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
        ValueError: ``FILE:LINE: ...`` for any other line that is not UTF-8 JSON, including a
            last line that ends in a newline (the writer finished it, so something else broke it).
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = _parse_line(raw)
            except ValueError as exc:
                if raw.endswith(b"\n"):
                    raise ValueError(
                        f"{path}:{number}: {exc}; only a last line cut short by a kill is skipped, "
                        "so repair or delete this one."
                    ) from None
                logger.warning("%s:%d: the last line is cut off (a kill during a write?); ignored", path, number)
                continue
            yield number, value


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


def _parse_line(raw: bytes) -> Any:
    """One line as JSON; ValueError with a short reason (decoding first names bad UTF-8 as such)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start + 1})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None


def _parses(raw: bytes) -> bool:
    try:
        _parse_line(raw)
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
    path: Path, parse: Callable[[Any, int], T], key: Callable[[T], str], kind: str, id_label: str = "id"
) -> list[T]:
    """Every non-blank line of ``path`` through ``parse(json_value, line_number)``, ids unique.

    Raises:
        ValueError: naming the file and line, for a line ``parse`` rejects (JSON, KeyError,
            TypeError or ValueError) or an id seen before; or when the file holds no record.
    """
    records: list[T] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = parse(json.loads(text), number)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{number} is not a {kind}: {type(exc).__name__}: {exc}") from exc
            record_id = key(record)
            if record_id in seen:
                raise ValueError(f"{path}:{number}: {id_label} {record_id!r} appears twice.")
            seen.add(record_id)
            records.append(record)
    if not records:
        raise ValueError(f"{path} holds no {kind}s.")
    return records
