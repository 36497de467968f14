"""Every dialogue source of the project, read into one record shape for ``pearl-verl view``.

Sources: a ``train-local`` folder (``dialogues/step_NNNN.jsonl`` and ``heldout.jsonl``), an
``eval-tutor`` run (``results.jsonl``), ``pearl-verl judge`` output (joined by ``id`` with the
dialogues it judged, when given too), ``pearl-verl simulate`` output (one row per student turn) and
verl's rollout dumps (``trainer.rollout_data_dir``: decoded prompt and response, score, uid). A
record is a plain dict (see :func:`record`); a reviewer's flags are computed here, once.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_objects

FLAGS: dict[str, str] = {
    "answer_first": "the tutor stated the final answer before the student reached it",
    "addresses_evaluator": "tutor text that talks to a judge, grader or rubric rather than the student",
    "judge_failed": "the judge gave no valid judgement (judge_ok = 0): excluded from the update",
    "truncated": "the dialogue ran out of its token budget",
}
"""What a reviewer should look at first, and why."""

EVALUATOR_TALK = re.compile(
    r"\b(judge|evaluator|grader|rubric|reward model|as an ai\b|this (dialogue|conversation|response) "
    r"(is|was|should|deserves)|score (me|this|my))", re.IGNORECASE
)
"""Tutor phrases addressed to whoever scores the dialogue (a policy that learned to please the judge)."""


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
) -> dict[str, Any]:
    """One dialogue in the viewer's shape, from an ``EpisodeRecord`` dict and what is known about it.

    Args:
        id: unique within the page.
        source: ``train``, ``heldout``, ``eval``, ``judge``, ``simulate`` or ``verl``.
        episode: ``EpisodeRecord.to_dict()``; None for a source without one (verl dumps, lone judgements).
        step: training step, where there is one.
        group: the GSPO group (verl's ``uid``) the dialogue's advantage was computed in.
        judge: a judgement as ``pearl-verl judge`` writes it (dims, judge_ok, gate, error, criteria).
        reward: the scalar reward.
        shaped: r~ per dimension (discretised, turn-decayed), in :data:`DIMENSIONS` order.
        advantage: the advantage the update used.
        tutor: which tutor (eval-tutor runs).
        turns: turns for a source without an episode (``[{"role", "text"}]``).
        slot: the same dialogue position at every evaluation (held-out seed, problem and member), so
            that the comparison view sets like against like.
    """
    episode = episode or {}
    problem = episode.get("problem") or {}
    condition = episode.get("condition") or {}
    profile = condition.get("profile") or {}
    trace = list(episode.get("student_trace") or [])
    raw_turns = list(episode.get("turns") or turns or [])
    out_turns, student = [], 0
    for turn in raw_turns:
        state = None
        if turn.get("role") == "student":
            if student < len(trace):
                state = _state(trace[student])
            student += 1
        out_turns.append({"role": turn.get("role", "tutor"), "text": str(turn.get("text", "")), "state": state})
    judge = dict(judge or {})
    ok = judge.get("judge_ok")
    dims = {d: float(judge[d]) for d in DIMENSIONS if judge.get(d) is not None} if judge and ok else None
    rec = {
        "id": id,
        "slot": slot,
        "source": source,
        "step": step,
        "group": group,
        "tutor": tutor,
        "problem_id": str(problem.get("problem_id", "")),
        "question": str(problem.get("question", "")),
        "answer": str(problem.get("answer", "")),
        "ability": _ability(profile),
        "profile": " ".join(f"{k[:3]}={v}" for k, v in profile.items()) or None,
        "misconception": condition.get("misconception"),
        "end_reason": episode.get("end_reason"),
        "turns": out_turns,
        "dims": dims,
        "judge_ok": None if ok is None else bool(ok),
        "gate": judge.get("gate"),
        "judge_error": judge.get("error"),
        "criteria": [
            {k: c.get(k) for k in ("dimension", "criterion", "score", "rationale")} for c in judge.get("criteria") or []
        ] or None,
        "reward": reward if reward is not None else _mean(dims),
        "shaped": dict(zip(DIMENSIONS, shaped)) if shaped else None,
        "advantage": advantage,
    }
    rec["flags"], rec["leak_turns"] = _flags(rec, episode)
    return rec


def _state(entry: Mapping[str, Any]) -> dict[str, Any]:
    mastery = entry.get("mastery") or {}
    return {
        "intent": list(entry.get("intent") or []),
        "attempt": entry.get("attempt"),
        "mastery": {unit: round(float(value), 2) for unit, value in mastery.items()},
    }


def _ability(profile: Mapping[str, Any]) -> str | None:
    if not profile:
        return None
    from pearl_verl.student.types import CognitiveProfile

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
        except (KeyError, TypeError, ValueError):
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
    """Every dialogue of ``paths`` (folders or JSONL files of any supported kind), judgements joined by id.

    A dialogue read later replaces an earlier one of the same id.

    Raises:
        InputError: for a path that does not exist, or a file of no supported kind (naming its keys).
    """
    import sys

    from tqdm import tqdm

    records: list[dict[str, Any]] = []
    judgements: dict[str, dict[str, Any]] = {}
    with tqdm(desc="view", unit=" dialogues", disable=None, file=sys.stderr) as bar:
        for path in map(Path, paths):
            if path.is_dir():
                found = _read_folder(path)
            elif path.is_file():
                kind, rows = _sniff(path)
                if kind == "judgements":
                    judgements.update({str(row["id"]): row for row in rows})
                    continue
                found = READERS[kind](rows, path)
            else:
                raise InputError(f"{path} does not exist.")
            for rec in found:
                records.append(rec)
                bar.update()
    return _join(records, judgements)


def _read_folder(folder: Path) -> Iterator[dict[str, Any]]:
    steps = sorted((folder / "dialogues").glob("step_*.jsonl"))
    found = False
    for path in steps:
        found = True
        yield from _train_rows(_jsonl(path), path)
    if (folder / "heldout.jsonl").is_file():
        found = True
        yield from _heldout_rows(_jsonl(folder / "heldout.jsonl"), folder / "heldout.jsonl")
    if (folder / "results.jsonl").is_file():
        found = True
        yield from _eval_rows(_jsonl(folder / "results.jsonl"), folder / "results.jsonl")
    if not found:  # a verl rollout dump: pearl_sync's <step>.pearl.jsonl where written, else verl's own files
        verl = sorted(folder.glob("*.pearl.jsonl")) or sorted(folder.glob("*.jsonl"))
        if not verl:
            raise InputError(f"{folder} holds no dialogues (dialogues/step_*.jsonl, heldout.jsonl, results.jsonl "
                             "or a verl rollout dump of <step>.jsonl files).")
        for path in verl:
            yield from read_sources([path])


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in read_objects(path, "dialogue file")]


def _sniff(path: Path) -> tuple[str, list[dict[str, Any]]]:
    rows = _jsonl(path)
    if not rows:
        raise InputError(f"{path} is empty.")
    keys = set(rows[0])
    for kind, needed in SIGNATURES:
        if needed <= keys:
            return kind, rows
    raise InputError(f"{path}: rows with keys {sorted(keys)} are of no kind pearl-verl view reads (train-local, "
                     "eval-tutor, judge, simulate, dialogue or verl rollout files).")


def _train_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    for i, row in enumerate(rows):
        yield record(id=f"train:{row['step']}:{i}", source="train", episode=row["episode"], step=row["step"],
                     group=row.get("uid"), judge=row.get("judge"), reward=row.get("reward"), shaped=row.get("shaped"),
                     advantage=row.get("advantage"))


def _heldout_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    for row in rows:
        judgements = row.get("judgements") or []
        for i, episode in enumerate(row["episodes"]):
            judge = {d: row["dims"][d][i] for d in DIMENSIONS if d in row.get("dims", {})}
            judge["judge_ok"] = int(row["rewards"][i] is not None)
            if i < len(judgements):  # written since the judgements (criteria, rationales, gate) are kept
                judge = judgements[i]
            yield record(id=f"heldout:{row['step']}:{i:04d}", slot=f"heldout:{i:04d}", source="heldout",
                         episode=episode, step=row["step"], judge=judge, reward=row["rewards"][i])


def _eval_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    for row in rows:
        if row.get("episode"):
            yield record(id=str(row["id"]), source="eval", episode=row["episode"], judge=row.get("judge"),
                         tutor=row.get("tutor"))


def _dialogue_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    for i, row in enumerate(rows):
        yield record(id=str(row.get("id", f"{path.stem}:{i + 1}")), source="dialogues", episode=row.get("episode", row))


def _simulate_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    dialogues: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        dialogues[row["dialogue"]].append(row)
    for number, turns in dialogues.items():
        turns.sort(key=lambda r: r["turn"])
        first = turns[0]
        episode_turns, trace = [], []
        for row in turns:
            if row.get("tutor_message"):
                episode_turns.append({"role": "tutor", "text": row["tutor_message"]})
            episode_turns.append({"role": "student", "text": row.get("student_message", "")})
            trace.append({"intent": row.get("intent"), "attempt": row.get("attempt"), "mastery": row.get("mastery")})
        episode = {"problem": {"problem_id": first.get("problem_id")}, "condition": {"profile": first.get("profile")},
                   "turns": episode_turns, "student_trace": trace, "end_reason": first.get("end_reason")}
        yield record(id=f"simulate:{number}", source="simulate", episode=episode)


def _verl_rows(rows: list[dict[str, Any]], path: Path) -> Iterator[dict[str, Any]]:
    for i, row in enumerate(rows):
        turns = [{"role": "student", "text": str(row.get("input", ""))},
                 {"role": "tutor", "text": str(row.get("output", ""))}]
        judge = {k: row[k] for k in (*DIMENSIONS, "judge_ok") if k in row} or None
        yield record(id=f"verl:{row.get('step')}:{i}", source="verl", step=row.get("step"), group=row.get("uid"),
                     judge=judge, reward=row.get("score"), turns=turns)


def _join(records: list[dict[str, Any]], judgements: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with the judgements of the same id laid over them (a judgement without its dialogue stays alone)."""
    by_id = {rec["id"]: rec for rec in records}
    for key, judgement in judgements.items():
        dialogue = by_id.get(key)
        judged = record(id=key, source="judge", judge=judgement, turns=dialogue["turns"] if dialogue else [])
        if dialogue is not None:
            judged = {**dialogue, **{k: judged[k] for k in JUDGEMENT_FIELDS}}
            failed = ["judge_failed"] if judged["judge_ok"] is False else []
            judged["flags"] = [f for f in dialogue["flags"] if f != "judge_failed"] + failed
        by_id[key] = judged
    return list(by_id.values())


JUDGEMENT_FIELDS = ("dims", "judge_ok", "gate", "judge_error", "criteria", "reward")
"""What a ``pearl-verl judge`` row adds to the dialogue it judged."""

SIGNATURES: tuple[tuple[str, set[str]], ...] = (
    ("train", {"episode", "judge", "uid", "advantage"}),
    ("eval", {"episode", "judge", "tutor"}),
    ("heldout", {"episodes", "rewards", "dims"}),
    ("simulate", {"dialogue", "turn", "student_message"}),
    ("judgements", {"id", "judge_ok", "line"}),
    ("dialogues", {"turns", "problem"}),
    ("verl", {"input", "output", "score"}),
)
"""How a file's first row tells its kind: the keys that kind always has, most specific first."""

READERS = {"train": _train_rows, "eval": _eval_rows, "heldout": _heldout_rows, "simulate": _simulate_rows,
           "dialogues": _dialogue_rows, "verl": _verl_rows}
