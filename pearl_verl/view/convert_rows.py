"""Rows written before rows carried their kind, rewritten as rows that do (``pearl-verl convert-rows``).

The one place that tells a row's kind from the keys it has. The formats it knows, each with what
wrote it:

- dialogue rows without a kind: a training one has ``advantage``, a held-out one ``slot`` or
  ``member``, an evaluated tutor's ``tutor``; any other ``episode`` row is a bare dialogue;
- ``heldout.jsonl`` before 2026-11-28: one evaluation a line (``episodes``, ``rewards``, ``dims``,
  later ``judgements`` and ``slots``), which becomes one held-out row per dialogue;
- bare ``EpisodeRecord`` lines (what ``pearl-verl judge`` read before its ``{"id", "episode"}`` rows);
- ``pearl-verl simulate`` rows (``dialogue``, ``turn``, ``student_message``) and ``pearl-verl judge``
  rows (``id``, ``judge_ok``, ``line``).

A row that already carries its kind at the current version passes through unchanged; verl's own
dumps (``input``, ``output``, ``score``) are verl's format and are left as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.row import dialogue_row, judgement_from_dims, positional_slots
from pearl_verl.errors import located
from pearl_verl.jsonl import read_objects
from pearl_verl.row_kinds import KIND_FIELD, kind_of, stamped
from pearl_verl.view.records import VERL_DUMP_FIELDS

GUESSES: tuple[tuple[str, frozenset[str]], ...] = (
    ("old_heldout", frozenset({"episodes", "rewards", "dims"})),
    ("dialogue_row", frozenset({"episode"})),
    ("student_turn", frozenset({"dialogue", "turn", "student_message"})),
    ("judgement", frozenset({"id", "judge_ok", "line"})),
    ("episode", frozenset({"turns", "problem"})),
)
"""An unkinded row's format by the keys it always has, most specific first."""


@dataclass
class Conversion:
    """What converting one file did."""

    path: Path
    rows_in: int = 0
    kinds: Counter = field(default_factory=Counter)
    """Rows written, by kind (``verl``: verl's own dump rows, left as they are)."""
    converted: int = 0
    """Rows that had no kind (a row of an old held-out file counts once, however many rows it gives)."""
    unreadable: list[str] = field(default_factory=list)
    """``FILE:LINE: why`` per line that is not a JSON object (left out of the converted file)."""

    @property
    def changed(self) -> bool:
        return bool(self.converted or self.unreadable)


def convert_rows(path: Path) -> tuple[list[dict[str, Any]], Conversion]:
    """The rows of ``path`` as this version writes them, and what was done.

    Raises:
        InputError: ``FILE:LINE: ...`` for a row of no format pearl_verl wrote, or of a kind or version
            this version does not read (a newer one): nothing is converted then.
    """
    report = Conversion(path)
    out: list[dict[str, Any]] = []
    for line, row in read_objects(path, "rows file", on_bad=lambda error: report.unreadable.append(str(error))):
        report.rows_in += 1
        if KIND_FIELD in row:
            try:
                kind_of(row)
            except ValueError as exc:
                raise located(path, line, str(exc)) from None
            out.append(row)
        elif VERL_DUMP_FIELDS <= row.keys():  # verl's own dump: not ours to stamp
            out.append(row)
        else:
            out.extend(convert_row(row, path, line))
            report.converted += 1
    report.kinds.update(row.get(KIND_FIELD, "verl") for row in out)
    return out, report


def convert_row(row: Mapping[str, Any], path: Path, line: int) -> list[dict[str, Any]]:
    """One unkinded row as the rows of this version (several for an old held-out evaluation line)."""
    keys = row.keys()
    form = next((name for name, needed in GUESSES if needed <= keys), None)
    if form is None:
        shown = ", ".join(sorted(map(str, keys))[:12]) + (", ..." if len(keys) > 12 else "")
        raise located(path, line, f"a row with keys [{shown}] is of no format pearl_verl wrote (dialogue, held-out, "
                                  "judge, simulate or episode rows).")
    if form == "dialogue_row":
        return [stamped(_dialogue_kind(row), row)]
    if form == "old_heldout":
        return _old_heldout(row, path, line)
    if form == "episode":
        episode = {k: v for k, v in row.items() if k != "id"}
        return [dialogue_row("dialogue", episode, None, None, id=str(row.get("id", f"{path.stem}:{line}")))]
    return [stamped(form, row)]


def _dialogue_kind(row: Mapping[str, Any]) -> str:
    if "advantage" in row:
        return "train"
    if "slot" in row or "member" in row:
        return "heldout"
    if "tutor" in row:
        return "eval"
    return "dialogue"


def _old_heldout(row: Mapping[str, Any], path: Path, line: int) -> list[dict[str, Any]]:
    """One evaluation a line: its dialogues as held-out rows, each judgement rebuilt from the per-dimension lists
    where the line kept no judgements (written before 2026-11-27)."""
    try:
        judgements, dims, rewards = row.get("judgements") or [], row.get("dims") or {}, row["rewards"]
        # (eval seed, problem, member) since evaluations ran in verl's validation; before, by position, as
        # train-local's append_heldout still numbers an evaluation without them
        slots = row.get("slots") or positional_slots(len(rewards), int(row.get("seeds") or 1))
        out = []
        for i, episode in enumerate(row["episodes"]):
            judge = judgements[i] if i < len(judgements) else judgement_from_dims(dims, rewards, i)
            out.append(dialogue_row("heldout", episode, judge, rewards[i], step=row.get("step"),
                                    phase=row.get("phase"), slot=list(slots[i]), seeds=row.get("seeds")))
        return out
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise located(path, line, f"an old held-out evaluation line that cannot be split into dialogues "
                                  f"({type(exc).__name__}: {exc}).") from None
