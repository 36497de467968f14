"""Readers for the public problem sources, with errors that name the file, line and field.

GSM8K (``question``, ``answer`` ending in ``#### n``), MATH-500 (``problem``, ``solution``,
``answer``) and MathDial (GSM8K-style ``question``/``ground_truth`` plus a real
``student_incorrect_solution``, used as the student's misconception). Final answers are
normalised once here; everything downstream compares them with math-verify.

Sources are local files (``.jsonl``, a ``.json`` list, or ``.parquet``; errors name the line, or
the row for lists and parquet) or Hugging Face dataset names (``hf:<name>[:<config>]@<split>``,
read through the ``datasets`` library; errors name the row).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.answers import gsm8k_final_answer, gsm8k_rationale, last_boxed, numbers_in
from pearl_verl.dialogue.problem import MAX_TEXT_CHARS, Problem
from pearl_verl.errors import InputError, located
from pearl_verl.jsonl import input_file, parse_line

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceItem:
    """One problem read from a source, with the misconception the source attaches (MathDial)."""

    problem: Problem
    misconception: str | None = None
    origin: str = ""
    """Where the row came from: ``<file>:<line>``, or ``<source>: row <n>`` for lists, parquet and the hub."""


@dataclass(frozen=True)
class RowError:
    """A row that could not be read: where, which field, why.

    Attributes:
        path: the file (or ``hf:<dataset>@<split>``).
        line: the 1-based line (JSONL) or row number (JSON lists, parquet, the hub).
        field: the offending field; ``<line>``/``<row>``/``<file>`` when the whole thing is unreadable.
        message: what is wrong.
        unit: ``line`` or ``row``, what ``line`` counts.
    """

    path: str
    line: int
    field: str
    message: str
    unit: str = "line"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.unit == "line" else f"{self.path}: row {self.line}"
        return f"{where}: field '{self.field}': {self.message}"


class SourceError(InputError):
    """Raised for a malformed row; ``error`` says where."""

    def __init__(self, error: RowError):
        super().__init__(str(error))
        self.error = error


def _text(row: dict[str, Any], key: str, path: str, line: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SourceError(RowError(path, line, key, "missing or empty"))
    if len(value) > MAX_TEXT_CHARS:
        raise SourceError(RowError(path, line, key, f"has {len(value):,} characters, over the {MAX_TEXT_CHARS:,} "
                                                    "a problem's field may have"))
    return value


def _gsm8k(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "question", path, line)
    answer_field = _text(row, "answer", path, line)
    try:
        answer = gsm8k_final_answer(answer_field)
    except ValueError as exc:
        raise SourceError(RowError(path, line, "answer", str(exc))) from None
    problem = Problem(f"{prefix}-{line:05d}", question, gsm8k_rationale(answer_field), answer, "gsm8k")
    return SourceItem(problem)


_TYPESETTING = re.compile(r"\\\$|\\!")


def normalise_math_answer(answer: str) -> str:
    """A MATH final answer without typesetting that hides its value from math-verify.

    Escaped dollar signs (currency, ``\\$18.90``) and negative thin spaces (``32,\\!348``) are
    removed; MATH-500 has three such answers, which math-verify otherwise cannot read.
    """
    return _TYPESETTING.sub("", answer).strip()


def _math(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "problem", path, line)
    solution = _text(row, "solution", path, line)
    answer = row.get("answer") if isinstance(row.get("answer"), str) and row["answer"].strip() else last_boxed(solution)
    if not answer or not normalise_math_answer(answer):
        raise SourceError(RowError(path, line, "answer", "missing, and the solution has no \\boxed{} answer"))
    ident = row.get("unique_id") or f"{line:05d}"
    return SourceItem(Problem(f"{prefix}-{ident}", question, solution, normalise_math_answer(answer), "math"))


def _mathdial(row: dict[str, Any], path: str, line: int, prefix: str) -> SourceItem:
    question = _text(row, "question", path, line)
    solution = _text(row, "ground_truth", path, line)
    # MathDial's ground truth is a GSM8K rationale whose last line is the bare final answer.
    *steps, final = solution.strip().splitlines()
    numbers = numbers_in(final)
    if not numbers:
        raise SourceError(RowError(path, line, "ground_truth", "its last line states no final number"))
    wrong = row.get("student_incorrect_solution")
    misconception = wrong.strip() if isinstance(wrong, str) and wrong.strip() else None
    ident = row.get("qid") or f"{line:05d}"
    problem = Problem(f"{prefix}-{ident}-{line:05d}", question, "\n".join(steps).strip(), numbers[-1], "mathdial")
    return SourceItem(problem, misconception)


READERS: dict[str, Callable[[dict[str, Any], str, int, str], SourceItem]] = {
    "gsm8k": _gsm8k,
    "math": _math,
    "mathdial": _mathdial,
}

_RESOURCES = Path(__file__).resolve().parents[1] / "resources" / "data"
FIXTURES: dict[str, Path] = {
    "gsm8k": _RESOURCES / "gsm8k" / "test_first50.jsonl",
    "math": _RESOURCES / "math500" / "test_first50.jsonl",
    "mathdial": _RESOURCES / "mathdial" / "test_first20.jsonl",
}
"""The small fixtures shipped with the package (licence notices beside them), per kind."""
FIXTURE_ALIAS = "@fixture"
"""Stands for ``FIXTURES[kind]`` wherever a source path is expected."""


def load_source(
    path: str | Path, kind: str, id_prefix: str | None = None, skip_errors: bool = False, limit: int | None = None
) -> tuple[list[SourceItem], list[RowError]]:
    """Read a whole source: a local file or a Hugging Face dataset name.

    Args:
        path: a ``.jsonl`` file (one object per line), a ``.json`` file holding a list of
            objects, a ``.parquet`` file, ``hf:<dataset>[:<config>]@<split>`` (see
            :func:`hf_records`), or ``@fixture`` for the shipped fixture of ``kind``.
        kind: ``gsm8k``, ``math`` (MATH / MATH-500) or ``mathdial``.
        id_prefix: prefix of problem ids (default: ``<kind>-<file stem>``, or
            ``<kind>-<dataset>-<split>`` for the hub).
        skip_errors: collect malformed rows instead of raising on the first.
        limit: read only the first ``limit`` rows (good or malformed); None reads all.

    Returns:
        (items, errors); errors is empty unless ``skip_errors``.

    Raises:
        InputError: unknown kind, unreadable file type, or a hub dataset that cannot be loaded;
            SourceError: a malformed row when not skipping.
    """
    if kind not in READERS:
        raise InputError(f"Unknown source kind {kind!r}; expected one of {sorted(READERS)}.")
    spec = str(path)
    if spec == FIXTURE_ALIAS:
        path = spec = str(FIXTURES[kind])
    if spec.startswith(HF_PREFIX):
        name, config, split = parse_hf_spec(spec)
        prefix = id_prefix or f"{kind}-{name.rsplit('/', 1)[-1]}-{split}"
        return convert_records(islice(hf_records(name, config, split), limit), spec, kind, prefix, skip_errors)
    prefix = id_prefix or f"{kind}-{Path(path).stem}"
    return convert_records(islice(file_records(path), limit), str(path), kind, prefix, skip_errors)


RawRecord = tuple[int, "dict[str, Any] | SourceError"]
"""(line or row number, the row object, or the error that made it unreadable)."""


def convert_records(
    records: Iterable[RawRecord], where: str, kind: str, prefix: str, skip_errors: bool
) -> tuple[list[SourceItem], list[RowError]]:
    """Read every record with ``kind``'s reader; see :func:`load_source`."""
    items: list[SourceItem] = []
    errors: list[RowError] = []
    unit = "line" if where.endswith(".jsonl") else "row"
    for number, row in records:
        try:
            try:
                if isinstance(row, SourceError):
                    raise row
                item = READERS[kind](row, where, number, prefix)
            except SourceError as exc:
                raise SourceError(replace(exc.error, unit=unit)) from None
            origin = f"{where}:{number}" if unit == "line" else f"{where}: row {number}"
            items.append(SourceItem(item.problem, item.misconception, origin))
        except SourceError as exc:
            if not skip_errors:
                raise
            errors.append(exc.error)
    if errors:
        logger.warning("%s: skipped %d malformed row(s), first: %s", where, len(errors), errors[0])
    return items, errors


def file_records(path: str | Path) -> Iterator[RawRecord]:
    """Records of a local file: JSONL by line, a JSON list or parquet by row (1-based).

    Raises:
        InputError: for a missing path, a directory, another suffix, or a JSON or parquet file
            that cannot be read as a whole (a bad JSONL line is yielded as its SourceError).
    """
    path = input_file(path, "source file")
    if path.suffix == ".jsonl":
        with path.open("rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                if raw.strip():
                    try:
                        yield line_no, _object_line(parse_line(raw), str(path), line_no)
                    except InputError as exc:
                        yield line_no, exc if isinstance(exc, SourceError) else _line_error(str(path), line_no, exc)
    elif path.suffix == ".json":
        try:
            rows = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SourceError(RowError(str(path), 1, "<file>", f"not UTF-8 text (byte {exc.start + 1})")) from None
        except json.JSONDecodeError as exc:
            raise SourceError(RowError(str(path), exc.lineno, "<file>", f"not valid JSON ({exc.msg})")) from None
        if not isinstance(rows, list):
            raise SourceError(RowError(str(path), 1, "<file>", f"expected a JSON list, got {type(rows).__name__}"))
        yield from _objects(rows, str(path))
    elif path.suffix == ".parquet":
        yield from _objects(read_parquet_rows(path), str(path))
    else:
        raise located(path, None, f"has suffix {path.suffix!r}; expected .jsonl, .json or .parquet.")


def read_parquet_frame(path: str | Path, what: str = "parquet file") -> Any:
    """A parquet file as a pandas DataFrame.

    Raises:
        InputError: naming the file when it is missing, a directory, or not parquet (pyarrow's
            reason quoted), instead of pyarrow's ``ArrowInvalid`` traceback.
    """
    import pandas as pd

    path = input_file(path, what)
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise located(path, None, f"is not a readable parquet file ({exc}).") from None


def read_parquet_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a parquet file as a dict (errors as :func:`read_parquet_frame`)."""
    return read_parquet_frame(path).to_dict(orient="records")


def _object_line(value: Any, path: str, line_no: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SourceError(RowError(path, line_no, "<line>", f"expected an object, got {type(value).__name__}"))
    return value


def _line_error(path: str, line_no: int, exc: InputError) -> SourceError:
    return SourceError(RowError(path, line_no, "<line>", str(exc)))


def _objects(rows: Iterable[Any], where: str) -> Iterator[RawRecord]:
    for number, row in enumerate(rows, start=1):
        if isinstance(row, dict):
            yield number, row
        else:
            yield number, SourceError(RowError(where, number, "<row>", f"expected an object, got {type(row).__name__}"))


HF_PREFIX = "hf:"
_HF_SPEC = re.compile(r"^hf:(?P<name>[\w.-]+(?:/[\w.-]+)?)(?::(?P<config>[\w.-]+))?@(?P<split>[\w.\[\]:%-]+)$")


def parse_hf_spec(spec: str) -> tuple[str, str | None, str]:
    """``hf:<dataset>[:<config>]@<split>`` as (dataset, config, split).

    Raises:
        InputError: naming the expected form, for anything else.
    """
    match = _HF_SPEC.match(spec)
    if not match:
        raise InputError(
            f"Hugging Face source {spec!r} must look like hf:<dataset>[:<config>]@<split>, "
            "e.g. hf:openai/gsm8k:main@test or hf:HuggingFaceH4/MATH-500@test."
        )
    return match["name"], match["config"], match["split"]


def hf_records(name: str, config: str | None, split: str) -> Iterator[RawRecord]:
    """Rows of a Hugging Face dataset split through the ``datasets`` library, numbered from 1.

    Raises:
        InputError: when the dataset cannot be loaded (offline machine, unknown name, config or
            split), with the library's reason and the local-file alternative.
    """
    try:
        import datasets
    except ImportError as exc:
        raise InputError("Hugging Face sources need the `datasets` package (pip install datasets).") from exc
    try:
        dataset = datasets.load_dataset(name, config, split=split)
    except (OSError, ValueError) as exc:  # the hub's errors: ConnectionError, DatasetNotFoundError, ...
        where = f"{name}" + (f" (config {config})" if config else "") + f", split {split}"
        raise InputError(
            f"Could not load the Hugging Face dataset {where}: {type(exc).__name__}: {exc}. "
            "If this machine is offline (HF_HUB_OFFLINE=1 or no network), download the data elsewhere and pass "
            "the local .jsonl/.json/.parquet file instead, e.g. gsm8k=path/to/test.jsonl."
        ) from exc
    yield from _objects(dataset, f"hf:{name}@{split}")
