"""Problems from any supported file, for the commands that take problem files (simulate, decompose, eval).

One row becomes a :class:`SimulationItem`: the problem, and the misconception its source provides
(MathDial's real incorrect solutions), whatever the file's shape: GSM8K, MATH, MathDial, a
``Problem`` dict, a ``pearl-verl prepare-data`` row or a verl row with ``extra_info.problem``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from pearl_verl.data.sources import SourceError, file_records
from pearl_verl.dialogue.answers import gsm8k_final_answer, gsm8k_rationale, last_boxed
from pearl_verl.dialogue.problem import Problem, SimulationItem
from pearl_verl.dialogue.sample import EXTRA_INFO_KEY, PearlSample
from pearl_verl.errors import InputError
from pearl_verl.ranges import POSITIVE


def problem_from_row(row: Mapping[str, Any], index: int, stem: str) -> SimulationItem:
    """A problem from one row of a supported file.

    Supported rows: pearl_verl ``Problem`` dicts; GSM8K (``question``, ``answer`` with ``####``);
    MATH (``problem``, ``solution``, ``answer`` or a ``\\boxed{}`` solution); MathDial (``question``,
    ``ground_truth``, ``student_incorrect_solution``); ``pearl-verl prepare-data`` rows (``extra_info.pearl``);
    verl rows with ``extra_info.problem``.

    Raises:
        InputError: for a row of none of these shapes (its keys are listed).
    """
    extra = row.get("extra_info")
    if isinstance(extra, Mapping) and EXTRA_INFO_KEY in extra:
        sample = PearlSample.from_row(extra, row.get("prompt"))
        return SimulationItem(sample.problem, sample.condition.misconception)
    if isinstance(extra, Mapping) and isinstance(extra.get("problem"), Mapping):
        return SimulationItem(Problem.from_dict(extra["problem"]))
    if {"problem_id", "question", "answer"} <= set(row):
        return SimulationItem(Problem.from_dict({k: row[k] for k in row if k in Problem.__dataclass_fields__}))
    pid = f"{stem}-{index:04d}"
    if {"question", "ground_truth"} <= set(row):
        truth = str(row["ground_truth"])
        answer = gsm8k_final_answer(truth) if "####" in truth else truth.strip().splitlines()[-1]
        qid = row.get("qid")
        return SimulationItem(
            Problem(
                f"mathdial-{qid}" if qid is not None else pid,
                row["question"],
                gsm8k_rationale(truth),
                answer,
                "mathdial",
            ),
            row.get("student_incorrect_solution"),
        )
    if {"question", "answer"} <= set(row) and "####" in str(row["answer"]):
        answer = str(row["answer"])
        return SimulationItem(
            Problem(pid, row["question"], gsm8k_rationale(answer), gsm8k_final_answer(answer), "gsm8k")
        )
    if {"problem", "solution"} <= set(row):
        answer = row.get("answer") or last_boxed(str(row["solution"]))
        if answer:
            return SimulationItem(Problem(pid, row["problem"], row["solution"], str(answer), "math"))
    raise InputError(
        f"keys {sorted(row)} match no problem format; expected a Problem dict, GSM8K (question, answer with ####), "
        "MATH (problem, solution[, answer]), MathDial (question, ground_truth) or verl extra_info.problem."
    )


def load_problems(path: str | Path, limit: int | None = None) -> list[SimulationItem]:
    """Problems from a ``.jsonl`` (one object per line), ``.json`` (a list) or ``.parquet`` file.

    Raises:
        InputError: ``FILE:LINE: ...`` (``FILE: row N`` for JSON lists and parquet) for the first
            row that is unreadable or of no supported shape, or for a path that is no such file.
    """
    path = Path(path)
    stem = f"{path.parent.name}-{path.stem}" if path.parent.name else path.stem
    where = "line" if path.suffix == ".jsonl" else "row"
    items = []
    for index, (number, row) in enumerate(islice(file_records(path), limit)):
        if isinstance(row, SourceError):
            raise row
        try:
            items.append(problem_from_row(row, index, stem))
        except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong type
            prefix = f"{path}:{number}" if where == "line" else f"{path}: row {number}"
            reason = f"field {exc} is missing" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"{prefix}: {reason}") from None
    return items


PROBLEM_FILES_HELP = (
    "problem files (.jsonl/.json/.parquet: GSM8K, MATH, MathDial, Problem rows or prepared parquet), relative to the "
    "working directory or to the data folder (e.g. gsm8k/test.jsonl; see the README's Data section)"
)


def add_problem_file_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """The ``PROBLEMS...`` positional and ``--limit`` of every command that reads problem files."""
    parser.add_argument("problems", nargs="+" if required else "*", help=PROBLEM_FILES_HELP)
    parser.add_argument("--limit", type=POSITIVE.flag, help="first N problems of each file")


def load_problem_files(paths: Iterable[str | Path], limit: int | None = None) -> list[SimulationItem]:
    """:func:`load_problems` of each path, looked up in the data folder when not found as given."""
    from pearl_verl.data.location import dataset_file

    return [item for path in paths for item in load_problems(dataset_file(path), limit)]
