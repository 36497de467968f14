"""``pearl-verl simulate --out``: per-turn rows written as each dialogue finishes, and resumed.

A long simulation against a real server must not lose its finished dialogues to a kill or a crash,
as eval-tutor and judge do not.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError, located
from pearl_verl.jsonl import drop_cut_tail, json_line, read_appended
from pearl_verl.resume_guard import check_resume, write_settings
from pearl_verl.write_whole import write_whole

RESUME_SETTINGS = ("problems", "limit", "simulator", "backend", "model", "planner", "no_refine", "tutor",
                   "tutor_model", "tutor_max_tokens", "ability", "seed", "max_turns", "structured_output")
"""What decides a run's dialogues: a resumed ``--out`` must have been written with the same values."""


class TurnOutput:
    """``--out``: each dialogue's rows appended as it finishes; a rerun resumes the dialogues not written.

    The settings go to ``OUT.settings.json`` beside it: a rerun with other settings would mix two
    runs' dialogues under one summary, so it is refused. A dialogue a kill cut short (fewer rows than
    its ``dialogue_rows``) is dropped from the file and run again. Without ``--out`` rows go to
    stdout and nothing resumes.
    """

    def __init__(self, path: Path | None, settings: dict[str, Any]) -> None:
        self.path, self.settings = path, settings
        self._handle: Any = None

    @property
    def settings_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".settings.json")

    def resume(self, jobs: list[Any]) -> dict[int, list[dict[str, Any]]]:
        """The complete dialogues already in the file, by job index (a cut one is dropped from the file)."""
        if self.path is None or not check_resume(self.path, self.settings_path, self.settings, "--out"):
            return {}
        drop_cut_tail(self.path)
        rows: dict[int, list[dict[str, Any]]] = {}
        for number, row in read_appended(self.path):
            if not isinstance(row, dict) or not isinstance(row.get("dialogue"), int) or "problem_id" not in row:
                raise located(self.path, number, "not a simulate turn row (no 'dialogue' or 'problem_id').")
            rows.setdefault(row["dialogue"], []).append(row)
        problems = {job.index: job.item.problem.problem_id for job in jobs}
        complete = {}
        for index, dialogue in rows.items():
            if problems.get(index) != dialogue[0]["problem_id"]:
                raise InputError(f"{self.path}: dialogue {index} is {dialogue[0]['problem_id']!r}, this run's is "
                                 f"{problems.get(index)!r}; the problem files changed: pick another --out.")
            if len(dialogue) == dialogue[0].get("dialogue_rows"):
                complete[index] = dialogue
        if len(complete) < len(rows):
            self._rewrite(complete)
        return complete

    def _rewrite(self, complete: dict[int, list[dict[str, Any]]]) -> None:
        write_whole(self.path, (json_line(row, ensure_ascii=False) for index in sorted(complete)
                                for row in complete[index]))

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        if self.path is None:
            self._handle = sys.stdout
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_settings(self.settings_path, self.settings)
        with self.path.open("a", encoding="utf-8") as self._handle:
            yield

    def write(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Append one dialogue's rows in one write, flushed; returns them."""
        self._handle.write("".join(json_line(row, ensure_ascii=False) for row in rows))
        self._handle.flush()
        return rows
