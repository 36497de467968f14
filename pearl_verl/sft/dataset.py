"""Generated dialogues -> verl's multi-turn SFT parquet and a summary.

Each kept dialogue becomes one row of verl's ``MultiTurnSFTDataset`` (``data.messages_key=messages``):
the tutor's view of the session, exactly what the agent loop shows the policy in RL::

    [{"role": "system", "content": tutor_system_prompt(problem)},
     {"role": "user", "content": <student opening>}, {"role": "assistant", "content": <tutor>}, ...]

verl computes the loss on assistant tokens only, so the model learns every tutor turn given the
dialogue before it (the paper's L^SFT sums log pi(a^t | q, h^t) over the n tutor turns). When the
tutor ended the session, its end-of-session marker is restored on the last tutor turn (the episode
record stores turns without it), so the model learns to end sessions; student messages after the
last tutor turn teach nothing and are left out. Other columns (``id``, ``data_source``,
``problem_id``, ``tutor_turns``, ``end_reason``) are for inspection and are ignored by verl.

Rows follow job order (input row, then sample index), never completion order, so a resumed run and
an uninterrupted run write the same files. All dialogues of one problem go to the same split.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dims import DIMENSIONS, JUDGE_OK_KEY
from pearl_verl.sft.filters import (
    DROP_REASONS,
    FilterConfig,
    balance_turns,
    deduplicate,
    drop_reason,
    turn_histogram,
)
from pearl_verl.tutor.tutor_prompts import episode_messages

logger = logging.getLogger(__name__)

RECORDS_NAME = "dialogues.jsonl"
SUMMARY_NAME = "sft_summary.json"
COLUMNS: tuple[str, ...] = ("id", "messages", "data_source", "problem_id", "tutor_turns", "end_reason")

TokenCounter = Callable[[list[dict[str, str]]], int]


def sft_messages(episode: EpisodeRecord, include_reference: bool = True) -> list[dict[str, str]]:
    """The tutor-view chat of one dialogue (:func:`pearl_verl.tutor.tutor_prompts.episode_messages`, the one
    implementation shared with train-local's cold start), as plain dicts for parquet."""
    return [dict(m) for m in episode_messages(episode, include_reference)]


def sft_row(key: str, episode: EpisodeRecord, messages: list[dict[str, str]]) -> dict[str, Any]:
    """One row of an SFT parquet (:data:`COLUMNS`): the dialogue's tutor-view chat (:func:`sft_messages`) and where
    it came from. gen-sft's set and train-local's cold start are written in this one format."""
    return {
        "id": key,
        "messages": messages,
        "data_source": episode.problem.source,
        "problem_id": episode.problem.problem_id,
        "tutor_turns": episode.tutor_turns,
        "end_reason": episode.end_reason,
    }


def is_validation(problem_id: str, fraction: float) -> bool:
    """Stable split by problem: the same problem always lands in the same split."""
    return zlib.crc32(f"pearl-sft-split|{problem_id}".encode()) % 10_000 < fraction * 10_000


@dataclass
class SFTSummary:
    """What the SFT set holds and why the rest was dropped (``sft_summary.json``).

    Attributes:
        jobs: dialogues asked for (rows x samples per row).
        dialogues: jobs with a generated dialogue in the records.
        missing: jobs without one yet (an interrupted run; rerun to finish).
        kept: dialogues in the SFT files.
        dropped: per reason (see :mod:`pearl_verl.sft.filters`), every dialogue counted once.
        end_reasons: end reasons of all generated dialogues.
        turns_generated: tutor-turn histogram of all generated dialogues.
        turns_kept: tutor-turn histogram of the kept dialogues.
        splits: kept rows per split.
        judge_means: per-dimension judge means over judged dialogues (None without a judge).
    """

    jobs: int = 0
    dialogues: int = 0
    missing: int = 0
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    end_reasons: dict[str, int] = field(default_factory=dict)
    turns_generated: dict[int, int] = field(default_factory=dict)
    turns_kept: dict[int, int] = field(default_factory=dict)
    splits: dict[str, int] = field(default_factory=dict)
    judge_means: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def lines(self) -> list[str]:
        """A human-readable summary."""
        out = [
            f"dialogues {self.dialogues}/{self.jobs} generated ({self.missing} missing) -> kept {self.kept} "
            + "(" + ", ".join(f"{k} {v}" for k, v in self.splits.items()) + ")"
        ]
        out += [f"  dropped {count:>7}  {reason}" for reason, count in self.dropped.items() if count]
        out.append("end reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(self.end_reasons.items())))
        out.append(_histogram_line("tutor turns, generated", self.turns_generated))
        out.append(_histogram_line("tutor turns, kept     ", self.turns_kept))
        if self.judge_means:
            out.append("judge means: " + ", ".join(f"{k} {v:.3f}" for k, v in self.judge_means.items()))
        return out


def _histogram_line(name: str, histogram: Mapping[int, int]) -> str:
    return f"{name}: " + " ".join(f"{turns}:{count}" for turns, count in histogram.items())


def read_records(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """The records file as {id: record} (the last line per id wins) and the number of unreadable lines.

    An unreadable line is the one a kill cut short; its dialogue is generated again.
    """
    records: dict[str, dict[str, Any]] = {}
    bad = 0
    if not path.exists():
        return records, bad
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
                key, _ = str(record["id"]), record["episode"]["end_reason"]  # a record must hold an episode
            except (json.JSONDecodeError, KeyError, TypeError):
                bad += 1
                logger.warning("%s:%d is not a complete record (cut off by a kill?); generated again", path, number)
                continue
            records[key] = record
    return records, bad


def build_sft(
    ids: Sequence[str],
    records: Mapping[str, Mapping[str, Any]],
    config: FilterConfig,
    include_reference: bool = True,
    val_fraction: float = 0.0,
    token_counter: TokenCounter | None = None,
    max_tokens: int | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], SFTSummary]:
    """Filter the dialogues of ``ids`` (job order) into SFT rows per split.

    Args:
        ids: the run's job ids in job order; records of other ids are ignored.
        records: generated records by id.
        config: filter settings.
        include_reference: show the reference solution in the system message (as the agent loop does).
        val_fraction: share of problems whose dialogues go to validation.
        token_counter: counts a chat's tokens (the trainer's tokenizer) for the ``too_long`` filter.
        max_tokens: the SFT trainer's ``data.max_length``; needs ``token_counter``.

    Returns:
        ({"train": rows, "val": rows}, summary).
    """
    summary = SFTSummary(jobs=len(ids), dropped=dict.fromkeys(DROP_REASONS, 0))
    present = [k for k in ids if k in records]
    summary.dialogues, summary.missing = len(present), len(ids) - len(present)
    episodes = {k: EpisodeRecord.from_dict(records[k]["episode"]) for k in present}
    messages = {k: sft_messages(episodes[k], include_reference) for k in present}
    summary.end_reasons = dict(Counter(e.end_reason for e in episodes.values()))
    summary.turns_generated = turn_histogram([e.tutor_turns for e in episodes.values()])
    summary.judge_means = _judge_means([records[k].get("judge") for k in present])
    survivors = []
    for key in present:
        n_tokens = token_counter(messages[key]) if token_counter is not None and max_tokens is not None else None
        reason = drop_reason(episodes[key], records[key].get("judge"), config, n_tokens, max_tokens)
        if reason is None:
            survivors.append(key)
        else:
            summary.dropped[reason] += 1
    if config.dedup:
        survivors, duplicates = deduplicate(survivors, episodes)
        summary.dropped["duplicate"] += len(duplicates)
    survivors, surplus = balance_turns(survivors, {k: episodes[k].tutor_turns for k in survivors}, config.turn_balance)
    summary.dropped["turn_balance"] += len(surplus)
    rows: dict[str, list[dict[str, Any]]] = {"train": [], "val": []}
    for key in survivors:
        split = "val" if is_validation(episodes[key].problem.problem_id, val_fraction) else "train"
        rows[split].append(sft_row(key, episodes[key], messages[key]))
    summary.kept = len(survivors)
    summary.turns_kept = turn_histogram([episodes[k].tutor_turns for k in survivors])
    summary.splits = {split: len(split_rows) for split, split_rows in rows.items()}
    return rows, summary


def _judge_means(infos: Sequence[Mapping[str, Any] | None]) -> dict[str, float] | None:
    judged = [info for info in infos if info is not None and info.get(JUDGE_OK_KEY)]
    if not any(info is not None for info in infos):
        return None
    if not judged:
        return {}
    return {d: sum(float(info[d]) for info in judged) / len(judged) for d in DIMENSIONS}


def write_sft(rows: Mapping[str, Sequence[dict[str, Any]]], out_dir: Path) -> list[Path]:
    """``train.parquet`` (always) and ``val.parquet`` (when it has rows) under ``out_dir``."""
    import pandas as pd

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for split, split_rows in rows.items():
        path = out_dir / f"{split}.parquet"
        if split_rows or split == "train":
            pd.DataFrame(list(split_rows), columns=list(COLUMNS)).to_parquet(path, index=False)
            written.append(path)
        elif path.exists():
            path.unlink()  # a stale file of an earlier run would be trained on as validation
    return written
