"""JSONL files that commands append to as they go and read back strictly.

Every long command (``judge``, ``gen-sft``, ``eval-tutor``) appends one line per finished item and
resumes from what the file holds; input files of pairs are read all-or-nothing with the offending
line named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def end_with_newline(path: Path) -> None:
    """Terminate a last line cut short by a kill, so appended lines start on their own line."""
    if path.exists() and path.stat().st_size:
        with path.open("rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                handle.write(b"\n")


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
