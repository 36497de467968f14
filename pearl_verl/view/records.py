"""Every dialogue source of the project, read into one record shape for ``pearl-verl view``.

Each row says what it is (``row_kind``, :mod:`pearl_verl.row_kinds`) and is read by that: dialogue rows
(:mod:`pearl_verl.dialogue.row`: a ``train-local`` folder's ``dialogues/step_NNNN.jsonl`` and
``heldout.jsonl``, ``pearl_sync``'s ``<step>.pearl.jsonl`` dumps, an ``eval-tutor`` run's ``results.jsonl``,
gen-sft's records), ``pearl-verl judge`` output (joined by ``id`` with the dialogues it judged, when given
too) and ``pearl-verl simulate`` output (one row per student turn). verl's own dumps (decoded prompt and
response, score, uid) carry no kind and are read by verl's fields. Rows pearl_verl wrote before rows
carried their kind are not guessed at here: ``pearl-verl convert-rows`` rewrites them. A record is a
plain dict (see :func:`record`); a reviewer's flags are computed here, once.

The viewer shows what it can: a long training run's folder may hold a line cut short by a kill or
a row of an older format, and one such row must not cost the reader the page. A line that is not
a JSON object, or a row without what its kind cannot be shown without (a training row's
``episode``), is skipped and named in :attr:`Reading.skipped`; a value of the wrong type or a
non-finite number (a score ``"high"``, NaN, a turn that is a string, text with an unpaired
surrogate) is shown as missing and its record flagged ``bad_input``, with the reason listed.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.jsonl import TOO_DEEP, read_objects
from pearl_verl.row_kinds import KIND_FIELD, RowKindError, kind_of

logger = logging.getLogger(__name__)

FLAGS: dict[str, str] = {
    "answer_first": "the tutor stated the final answer before the student reached it",
    "addresses_evaluator": "tutor text that talks to a judge, grader or rubric rather than the student",
    "judge_failed": "the judge gave no valid judgement (judge_ok = 0): excluded from the update",
    "truncated": "the dialogue ran out of its token budget",
    "bad_input": "the input held values the page cannot show as they are (a score that is not a number, NaN or "
                 "infinity, a turn that is not an object, text that is not valid Unicode): shown as missing (–) "
                 "or as \ufffd, each listed here",
}
"""What a reviewer should look at first, and why."""

EVALUATOR_TALK = re.compile(
    r"\b(judge|evaluator|grader|rubric|reward model|as an ai\b|this (dialogue|conversation|response) "
    r"(is|was|should|deserves)|score (me|this|my))", re.IGNORECASE
)
"""Tutor phrases addressed to whoever scores the dialogue (a policy that learned to please the judge)."""

ROW_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)
"""What a row of the wrong shape raises while it is turned into records: that row is skipped and named."""

SHOWN = 60
"""Characters of an input value quoted in a message at most: a message names a value, it does not echo it."""

MAX_ISSUES = 10
"""Reasons listed per record at most (a dialogue of 40 NaN turns says so in ten lines and a count)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Reading:
    """What :func:`read_dialogues` found: the records, and each input row it had to leave out."""

    records: list[dict[str, Any]]
    skipped: list[str] = field(default_factory=list)
    """``FILE:LINE: why`` per row left out (a line that is not JSON, a row without its episode)."""


def record(
    *,
    id: str,
    source: str,
    episode: Mapping[str, Any] | None = None,
    step: int | None = None,
    group: str | None = None,
    judge: Mapping[str, Any] | None = None,
    reward: float | None = None,
    shaped: Sequence[float] | None = None,
    advantage: float | None = None,
    tutor: str | None = None,
    turns: Sequence[Mapping[str, Any]] | None = None,
    slot: str | None = None,
    issues: Sequence[str] = (),
) -> dict[str, Any]:
    """One dialogue in the viewer's shape, from an ``EpisodeRecord`` dict and what is known about it.

    Every value is checked here, once: one of the wrong type, or a number that is not finite, is
    left out (shown as missing, never as 0) and named in ``issues``, and the record flagged
    ``bad_input``; so the page's data is always strict JSON.

    Args:
        id: unique within the page.
        source: ``train``, ``heldout``, ``eval``, ``judge``, ``simulate``, ``dialogues`` or ``verl``.
        episode: ``EpisodeRecord.to_dict()``; None for a source without one (verl dumps, lone judgements).
        step: training step, where there is one.
        group: the GSPO group (verl's ``uid``) the dialogue's advantage was computed in.
        judge: a judgement as ``pearl-verl judge`` writes it (dims, judge_ok, gate, error, criteria).
        reward: the scalar reward (None: the mean of the judge's dimensions).
        shaped: r~ per dimension (discretised, turn-decayed), in :data:`DIMENSIONS` order.
        advantage: the advantage the update used.
        tutor: which tutor (eval-tutor runs).
        turns: turns for a source without an episode (``[{"role", "text"}]``).
        slot: the same dialogue position at every evaluation (held-out seed, problem and member), so
            that the comparison view sets like against like.
        issues: what the reader already found wrong with the row (a step taken from the file name).
    """
    issues = list(issues)
    episode = _mapping(episode, "episode", issues)
    problem = _mapping(episode.get("problem"), "problem", issues)
    condition = _mapping(episode.get("condition"), "condition", issues)
    profile = _mapping(condition.get("profile"), "profile", issues)
    trace = _sequence(episode.get("student_trace"), "student_trace", issues)
    judge = _mapping(judge, "judge", issues)
    ok = _judge_ok(judge.get("judge_ok"), issues)
    dims = _dims(judge, issues) if ok else None
    rec = {
        "id": id,
        "slot": slot,
        "source": source,
        "step": step,
        "group": _text(group),
        "tutor": _text(tutor),
        "problem_id": str(problem.get("problem_id", "")),
        "question": str(problem.get("question", "")),
        "answer": str(problem.get("answer", "")),
        "ability": _ability(profile),
        "profile": " ".join(f"{k[:3]}={v}" for k, v in profile.items()) or None,
        "misconception": _text(condition.get("misconception")),
        "end_reason": _text(episode.get("end_reason")),
        "turns": _turns(_sequence(episode.get("turns") or turns, "turns", issues), trace, issues),
        "dims": dims,
        "judge_ok": ok,
        "gate": _number(judge.get("gate"), "judge gate", issues),
        "judge_error": _text(judge.get("error")),
        "criteria": _criteria(judge.get("criteria"), issues),
        "reward": _mean(dims) if reward is None else _number(reward, "reward", issues),
        "shaped": _shaped(shaped, issues),
        "advantage": _number(advantage, "advantage", issues),
    }
    rec = _strict(rec, issues)
    rec["flags"], rec["leak_turns"] = _flags(rec, episode)
    rec["issues"] = _capped(issues)
    if rec["issues"]:
        rec["flags"].append("bad_input")
    return rec


def _turns(raw: Sequence[Any], trace: Sequence[Any], issues: list[str]) -> list[dict[str, Any]]:
    """``{"role", "text", "state"}`` per turn, the student's state from ``trace`` on each student turn."""
    out, student = [], 0
    for i, turn in enumerate(raw):
        if not isinstance(turn, Mapping):  # a bare string: its text is kept, shown as the tutor's (the default)
            issues.append(f"turn {i + 1}: a {type(turn).__name__}, not an object with role and text")
            turn = {"text": turn}
        state = None
        role = str(turn.get("role", "tutor"))
        if role == "student":
            if student < len(trace):
                state = _state(trace[student], f"student state {student + 1}", issues)
            student += 1
        out.append({"role": role, "text": _text(turn.get("text")) or "", "state": state})
    return out


def _state(entry: Any, where: str, issues: list[str]) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping):
        _mapping(entry, where, issues)  # names it
        return None
    mastery = _mapping(entry.get("mastery"), f"{where}: mastery", issues)
    levels = {str(unit): _number(value, f"{where}: mastery of {_short(unit)}", issues) for unit, value in mastery.items()}
    return {
        "intent": _strings(entry.get("intent")),
        "attempt": _text(entry.get("attempt")),
        "mastery": {unit: round(level, 2) for unit, level in levels.items() if level is not None},
    }


def _judge_ok(value: Any, issues: list[str]) -> bool | None:
    if value is None:
        return None
    if isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return bool(value)
    issues.append(f"judge_ok: {_short(value)} is not 0 or 1; shown as not judged")
    return None


def _dims(judge: Mapping[str, Any], issues: list[str]) -> dict[str, float]:
    """The judge's score per dimension; one that is missing or not a number is left out (shown as –)."""
    scores = {d: _number(judge.get(d), f"judge score {d}", issues) for d in DIMENSIONS}
    return {d: score for d, score in scores.items() if score is not None}


def _criteria(value: Any, issues: list[str]) -> list[dict[str, Any]] | None:
    out = []
    for i, criterion in enumerate(_sequence(value, "judge criteria", issues)):
        if not isinstance(criterion, Mapping):
            issues.append(f"judge criterion {i + 1}: a {type(criterion).__name__}, not an object; left out")
            continue
        out.append({
            "dimension": _text(criterion.get("dimension")),
            "criterion": _text(criterion.get("criterion")),
            "score": _number(criterion.get("score"), f"judge criterion {i + 1} score", issues),
            "rationale": _text(criterion.get("rationale")),
        })
    return out or None


def _shaped(value: Any, issues: list[str]) -> dict[str, float | None] | None:
    if not value:
        return None
    if not isinstance(value, (list, tuple)):
        issues.append(f"shaped: {_short(value)} is not a list of numbers; left out")
        return None
    return {d: _number(v, f"shaped {d}", issues) for d, v in zip(DIMENSIONS, value)}


def _number(value: Any, where: str, issues: list[str]) -> float | None:
    """``value`` as a finite float; None (shown as missing, not as 0) and a reason in ``issues`` otherwise."""
    if value is None:
        return None
    try:
        number = float(value)  # numbers and numeric strings ("0.5") read as before
    except (TypeError, ValueError, OverflowError):
        issues.append(f"{where}: {_short(value)} is not a number; shown as missing")
        return None
    if not math.isfinite(number):
        issues.append(f"{where}: {_short(value)} is not a finite number; shown as missing")
        return None
    return number


def _mapping(value: Any, where: str, issues: list[str]) -> Mapping[str, Any]:
    if value is None or isinstance(value, Mapping):
        return value or {}
    issues.append(f"{where}: a {type(value).__name__} where an object belongs; left out")
    return {}


def _sequence(value: Any, where: str, issues: list[str]) -> list[Any]:
    if value is None or isinstance(value, (list, tuple)):
        return list(value or [])
    issues.append(f"{where}: a {type(value).__name__} where a list belongs; left out")
    return []


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _text(value: Any) -> str | None:
    """A label (group, tutor, end reason...) as text: a number or an object from the input as its JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _strict(rec: dict[str, Any], issues: list[str]) -> dict[str, Any]:
    """``rec`` when it is strict UTF-8 JSON (nearly always: checked in C); else a copy that is.

    What is left to catch here is what no field's check sees: a NaN inside a student state, an
    unpaired surrogate (``"\\ud800"`` in the JSON) in any text, which UTF-8 cannot encode.
    """
    try:
        json.dumps(rec, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return rec
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return _clean(rec, "", issues)


def _clean(value: Any, where: str, issues: list[str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        issues.append(f"{where}: {value} is not a finite number; shown as missing")
        return None
    if isinstance(value, str):
        if _SURROGATE.search(value):
            issues.append(f"{where}: text with an unpaired surrogate (not valid Unicode); shown as \ufffd")
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {_clean(k, where, issues): _clean(v, _label(where, k), issues) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, f"{where}[{i}]", issues) for i, v in enumerate(value)]
    return value


def _label(where: str, key: Any) -> str:
    key = _SURROGATE.sub("\ufffd", str(key))[:SHOWN]
    return f"{where}.{key}" if where else key


def _capped(issues: list[str]) -> list[str]:
    unique = list(dict.fromkeys(issues))
    if len(unique) <= MAX_ISSUES:
        return unique
    return [*unique[:MAX_ISSUES], f"and {len(unique) - MAX_ISSUES} more"]


def _short(value: Any) -> str:
    """``value`` as a message shows it: its repr, cut to :data:`SHOWN` characters."""
    shown = repr(value)
    return shown if len(shown) <= SHOWN else shown[: SHOWN - 3] + "..."


def _ability(profile: Mapping[str, Any]) -> str | None:
    if not profile:
        return None
    from pearl_verl.dialogue.student_contract import CognitiveProfile

    try:
        return CognitiveProfile(**profile).ability
    except (TypeError, ValueError):
        return None


def _mean(dims: Mapping[str, float] | None) -> float | None:
    return sum(dims.values()) / len(dims) if dims else None


def _flags(rec: Mapping[str, Any], episode: Mapping[str, Any]) -> tuple[list[str], list[int]]:
    flags, leaks = [], []
    if episode.get("turns") and episode.get("problem"):
        from pearl_verl.dialogue.episode import EpisodeRecord
        from pearl_verl.judge.features import extract_features

        try:
            leaks = list(extract_features(EpisodeRecord.from_dict(episode)).leak_turns)
        except ROW_ERRORS:  # an episode of the wrong shape has no leak to show; its issues say why
            leaks = []
    if leaks:
        flags.append("answer_first")
    if any(t["role"] == "tutor" and EVALUATOR_TALK.search(t["text"]) for t in rec["turns"]):
        flags.append("addresses_evaluator")
    if rec["judge_ok"] is False:
        flags.append("judge_failed")
    if rec["end_reason"] == "token_budget":
        flags.append("truncated")
    return flags, leaks


def read_sources(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The records of :func:`read_dialogues` (rows it had to skip left out)."""
    return read_dialogues(paths).records


def read_dialogues(paths: Iterable[str | Path]) -> Reading:
    """Every dialogue of ``paths`` (folders or JSONL files of rows), judgements joined by id.

    Each row is read by its ``row_kind`` (:mod:`pearl_verl.row_kinds`); verl's own rollout dumps, which
    carry none, by verl's fields. A dialogue read later replaces an earlier one of the same id. A row
    that cannot be shown is skipped and named in :attr:`Reading.skipped` (see the module's docstring).

    Raises:
        InputError: for a path that does not exist, or a file none of whose lines is a row this version
            reads (rows written before rows carried their kind: the message names ``convert-rows``).
    """
    import sys

    from tqdm import tqdm

    records: list[dict[str, Any]] = []
    judgements: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    with tqdm(desc="view", unit=" dialogues", disable=None, file=sys.stderr) as bar:
        for path in map(Path, paths):
            if path.is_dir():
                files = _folder_files(path)
            elif path.is_file():
                files = [(path, True)]
            else:
                raise InputError(f"{path} does not exist.")
            for file, required in files:
                try:
                    by_kind = _rows_by_kind(file, skipped)
                except InputError as exc:
                    if required:
                        raise
                    skipped.append(str(exc))  # one empty or cut-off dump of a folder of them: noted, not fatal
                    continue
                judgements.update(_judgement_rows(by_kind.pop("judgement", []), file, skipped))
                for kind, rows in by_kind.items():
                    for rec in READERS[kind](rows, file, skipped):
                        records.append(rec)
                        bar.update()
    return Reading(_join(records, judgements), skipped)


Rows = list[tuple[int, dict[str, Any]]]
"""A file's object lines: (1-based line number, object)."""

VERL_DUMP_FIELDS = frozenset({"input", "output", "score"})
"""What every row of verl's own rollout and validation dumps has (verl writes no kind: its format is not ours)."""


def _folder_files(folder: Path) -> list[tuple[Path, bool]]:
    """The files of dialogues in ``folder`` by their names, each with whether it must hold rows this version reads:
    a train-local or eval-tutor folder's, else a verl rollout dump (pearl_sync's ``<step>.pearl.jsonl`` where
    written, else verl's own files) of which an empty or cut-off file is noted and passed over."""
    ours = [*sorted((folder / "dialogues").glob("step_*.jsonl")),
            *(path for path in (folder / "heldout.jsonl", folder / "results.jsonl") if path.is_file())]
    if ours:
        return [(path, True) for path in ours]
    dumps = sorted(folder.glob("*.pearl.jsonl")) or sorted(folder.glob("*.jsonl"))
    if not dumps:
        raise InputError(f"{folder} holds no dialogues (dialogues/step_*.jsonl, heldout.jsonl, results.jsonl "
                         "or a verl rollout dump of <step>.jsonl files).")
    return [(path, False) for path in dumps]


def _rows_by_kind(path: Path, skipped: list[str]) -> dict[str, Rows]:
    """The rows of ``path`` by kind; a row of no kind this version reads is skipped and named.

    Raises:
        InputError: when no line of the file is a row this version reads.
    """
    before = len(skipped)
    rows = list(read_objects(path, "dialogue file", on_bad=lambda error: skipped.append(str(error))))
    if not rows and len(skipped) > before:  # nothing readable: one error, not a page of nothing
        del skipped[before + 1:]
        raise InputError(f"{skipped.pop()} (and no line of the file is a readable row).")
    if not rows:
        raise InputError(f"{path} is empty.")
    by_kind: dict[str, Rows] = defaultdict(list)
    refused: list[str] = []
    for line, row in rows:
        if KIND_FIELD not in row and VERL_DUMP_FIELDS <= row.keys():
            by_kind["verl"].append((line, row))
            continue
        try:
            kind = kind_of(row)
        except RowKindError as exc:
            refused.append(f"{path}:{line}: {exc}")
            continue
        if kind in READERS or kind == "judgement":
            by_kind[kind].append((line, row))
        else:
            refused.append(f"{path}:{line}: a {kind} row, not a dialogue, a judgement or a student turn.")
    if not by_kind and all(KIND_FIELD not in row for _, row in rows):
        shown = ", ".join(_short(k) for k in sorted(rows[0][1])[:12]) + (", ..." if len(rows[0][1]) > 12 else "")
        raise InputError(f"{path}: no row says what it is (row_kind; the first has keys [{shown}]): `pearl-verl "
                         "convert-rows` converts rows pearl_verl wrote before rows carried their kind (this file, or "
                         "the run's folder).")
    if not by_kind:
        raise InputError(f"{refused[0]} (no line of the file is a row pearl-verl view reads)")
    skipped.extend(refused)
    return by_kind


def _each(
    rows: Rows, path: Path, skipped: list[str], make: Callable[[int, dict[str, Any], int], list[dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    """``make(line, row, index)``'s records for each row; a row it cannot read is skipped and named."""
    for index, (line, row) in enumerate(rows):
        try:
            made = make(line, row, index)
        except ROW_ERRORS as exc:
            skipped.append(f"{path}:{line}: {_why(exc)}")
            logger.debug("%s:%d: row skipped", path, line, exc_info=True)  # -v: a bug of ours would show here
            continue
        yield from made


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no field {_short(exc.args[0] if exc.args else '?')}."
    if isinstance(exc, RecursionError):
        return f"{TOO_DEEP}."
    text = str(exc)
    return f"{type(exc).__name__}: {text if len(text) <= 2 * SHOWN else text[:2 * SHOWN - 3] + '...'}."


def _step(row: Mapping[str, Any], path: Path, issues: list[str]) -> int | None:
    """The row's step as a whole number; missing or malformed: the file's (``step_0003.jsonl``, ``3.jsonl``)."""
    value = row.get("step")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
        return int(value)
    match = re.fullmatch(r"(?:step_)?(\d{1,18})(?:\.pearl)?", path.stem)
    fallback = int(match.group(1)) if match else None
    what = "missing" if value is None else f"{_short(value)} is not a whole number"
    issues.append(f"step: {what}; " + ("none shown" if fallback is None else f"taken from the file name ({fallback})"))
    return fallback


def _dialogue_rows(rows: Rows, path: Path, skipped: list[str]) -> Iterator[dict[str, Any]]:
    """Dialogue rows (:mod:`pearl_verl.dialogue.row`) by their kind; a row without its episode is skipped."""
    def make(line: int, row: dict[str, Any], i: int) -> list[dict[str, Any]]:
        if "episode" not in row:
            raise KeyError("episode")  # what a dialogue row cannot be shown without: skipped and named
        kind, issues = row[KIND_FIELD], []
        if kind == "eval" and not row["episode"]:
            return []  # the dialogue failed before it began: its error is in the tables
        step = _step(row, path, issues) if kind in ("train", "heldout") else None
        at = path.stem if step is None else step
        slot = _slot(row) if kind == "heldout" else None
        name = {"train": f"train:{at}:{i}", "heldout": f"heldout:{at}:{slot}"}.get(kind)
        return [record(id=str(row.get("id", name or f"{path.stem}:{i + 1}")), source=SOURCES[kind],
                       episode=row["episode"], step=step, group=row.get("uid") if kind == "train" else None,
                       judge=row.get("judge"), reward=row.get("reward"), shaped=row.get("shaped"),
                       advantage=row.get("advantage"), tutor=row.get("tutor"),
                       slot=None if slot is None else f"heldout:{slot}", issues=issues)]

    return _each(rows, path, skipped, make)


SOURCES = {"train": "train", "heldout": "heldout", "eval": "eval", "dialogue": "dialogues"}
"""A dialogue row's kind -> the record's source, as the page names it."""


def _slot(row: Mapping[str, Any]) -> str:
    """A held-out dialogue's place at every evaluation: eval seed, problem, member (a dump's problem and member)."""
    parts = row["slot"] if "slot" in row else [row["problem"], row["member"]]
    return "-".join(map(str, parts))


def _simulate_rows(rows: Rows, path: Path, skipped: list[str]) -> Iterator[dict[str, Any]]:
    dialogues: dict[str, Rows] = defaultdict(list)
    for line, row in rows:
        if "dialogue" not in row:
            skipped.append(f"{path}:{line}: no field 'dialogue'.")
            continue
        dialogues[str(row["dialogue"])].append((line, row))  # by its text: 1 and "1" are one dialogue, one id
    return _each([(members[0][0], members) for members in dialogues.values()], path, skipped,
                 lambda line, members, i: [_simulated(members)])


def _simulated(members: Rows) -> dict[str, Any]:
    """One dialogue from its simulate rows, in turn order (turn numbers as numbers, whatever their type)."""
    turns = sorted((row for _, row in members), key=lambda row: _turn_order(row.get("turn")))
    first = turns[0]
    episode_turns, trace = [], []
    for row in turns:
        if row.get("tutor_message"):
            episode_turns.append({"role": "tutor", "text": row["tutor_message"]})
        episode_turns.append({"role": "student", "text": row.get("student_message", "")})
        trace.append({"intent": row.get("intent"), "attempt": row.get("attempt"), "mastery": row.get("mastery")})
    episode = {"problem": {"problem_id": first.get("problem_id")}, "condition": {"profile": first.get("profile")},
               "turns": episode_turns, "student_trace": trace, "end_reason": first.get("end_reason")}
    return record(id=f"simulate:{first['dialogue']}", source="simulate", episode=episode)


def _turn_order(value: Any) -> tuple[int, float, str]:
    """Sort key of a turn number: 2 and "2" alike, before any that is not a number (never int < str)."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return (1, 0.0, str(value))
    return (0, number, "") if math.isfinite(number) else (1, 0.0, str(value))


def _verl_rows(rows: Rows, path: Path, skipped: list[str]) -> Iterator[dict[str, Any]]:
    def make(line: int, row: dict[str, Any], i: int) -> list[dict[str, Any]]:
        issues: list[str] = []
        step = _step(row, path, issues)
        turns = [{"role": "student", "text": _text(row.get("input")) or ""},
                 {"role": "tutor", "text": _text(row.get("output")) or ""}]
        judge = {k: row[k] for k in (*DIMENSIONS, "judge_ok") if k in row} or None
        return [record(id=f"verl:{path.stem if step is None else step}:{i}", source="verl", step=step,
                       group=row.get("uid"), judge=judge, reward=row.get("score"), turns=turns, issues=issues)]

    return _each(rows, path, skipped, make)


def _judgement_rows(rows: Rows, path: Path, skipped: list[str]) -> dict[str, dict[str, Any]]:
    """``pearl-verl judge`` output by id; a row without an id cannot be joined, and is skipped."""
    out = {}
    for line, row in rows:
        if row.get("id") is None:
            skipped.append(f"{path}:{line}: no field 'id'.")
            continue
        out[str(row["id"])] = row
    return out


def _join(records: list[dict[str, Any]], judgements: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with the judgements of the same id laid over them (a judgement without its dialogue stays alone)."""
    by_id = {rec["id"]: rec for rec in records}
    for key, judgement in judgements.items():
        dialogue = by_id.get(key)
        judged = record(id=key, source="judge", judge=judgement, turns=dialogue["turns"] if dialogue else [])
        if dialogue is not None:
            issues = _capped(dialogue["issues"] + judged["issues"])
            judged = {**dialogue, **{k: judged[k] for k in JUDGEMENT_FIELDS}, "issues": issues}
            own = [f for f in dialogue["flags"] if f not in ("judge_failed", "bad_input")]
            judged["flags"] = (own + (["judge_failed"] if judged["judge_ok"] is False else [])
                               + (["bad_input"] if judged["issues"] else []))
        by_id[key] = judged
    return list(by_id.values())


JUDGEMENT_FIELDS = ("dims", "judge_ok", "gate", "judge_error", "criteria", "reward")
"""What a ``pearl-verl judge`` row adds to the dialogue it judged."""

READERS: dict[str, Callable[[Rows, Path, list[str]], Iterator[dict[str, Any]]]] = {
    "train": _dialogue_rows, "heldout": _dialogue_rows, "eval": _dialogue_rows, "dialogue": _dialogue_rows,
    "student_turn": _simulate_rows, "verl": _verl_rows,
}
"""How each kind of row becomes records (judgements are joined to them instead)."""
