"""Judge a JSONL file of dialogues into a JSONL file of scores, incrementally and resumably.

Input: one JSON object per line, either an ``EpisodeRecord.to_dict()`` (optionally with an
``"id"``) or ``{"id": ..., "episode": {...}}``. A line without an id is named ``line-<n>``.

Output: one JSON object per judged line, appended and flushed as soon as its judgement is done
(in completion order): ``id``, ``line``, the 8 dimensions, ``judge_ok``, ``completed``,
``tutor_turns``, ``judge_latency_s``, ``gate``, ``attempts``, ``error`` (None when ok) and, on
request, the criterion-level ``criteria``. Re-running with the same output skips ids already
there (with ``retry_failed``, only those with ``judge_ok=1``), so a killed run resumes where it
stopped; a line cut short by the kill is ignored and judged again.

A malformed input line becomes an output line with ``judge_ok=0`` and its error; it never stops
the run. An episode that ended in a tutor or student backend error is flagged the same way without
a judge call (:func:`pearl_verl.judge.reward_info.should_judge`), and ``retry_failed`` leaves it alone:
no call could change it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dims import DIMENSIONS, JUDGE_OK_KEY
from pearl_verl.errors import InputError, located
from pearl_verl.jsonl import drop_cut_tail, input_file, json_line, parse_line, read_appended
from pearl_verl.judge.judge_contract import JudgeResult, TutoringJudge
from pearl_verl.judge.reward_info import not_judged_reason, reward_info, should_judge
from pearl_verl.row_kinds import stamped

logger = logging.getLogger(__name__)


@dataclass
class BatchSummary:
    """What one run did, and what the output now holds for the input's ids.

    Attributes:
        total: input lines.
        skipped: lines already judged in the output (resume).
        judged: lines written in this run (``ok + failed + flagged``).
        ok: written lines with ``judge_ok=1``.
        failed: written lines whose judgement failed (endpoint failure, unparsable or short output):
            judging them again may succeed.
        flagged: written lines not judged because the episode ended in a backend error.
        unreadable: written lines for input lines that hold no dialogue (not JSON, not UTF-8, not an
            episode record): judging again repeats the error until the line is fixed.
        skipped_failed: skipped lines whose stored judgement failed (kept without ``retry_failed``).
        skipped_flagged: skipped lines whose episode ended in a backend error.
        skipped_unreadable: skipped input lines that hold no dialogue, with a stored row.
        unreadable_lines: the input line numbers that hold no dialogue (in the order they were done).
        dim_sums: per-dimension sums over this run's ok lines (for means).
    """

    total: int = 0
    skipped: int = 0
    judged: int = 0
    ok: int = 0
    failed: int = 0
    flagged: int = 0
    skipped_failed: int = 0
    skipped_flagged: int = 0
    unreadable: int = 0
    skipped_unreadable: int = 0
    unreadable_lines: list[int] = field(default_factory=list)
    dim_sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(DIMENSIONS, 0.0))

    def means(self) -> dict[str, float]:
        """Per-dimension means over this run's ok lines (empty when none)."""
        return {d: s / self.ok for d, s in self.dim_sums.items()} if self.ok else {}

    @property
    def failed_in_output(self) -> int:
        """Input ids whose latest judgement in the output failed, this run's and earlier runs'."""
        return self.failed + self.skipped_failed

    @property
    def flagged_in_output(self) -> int:
        """Input ids not judged because their episode ended in a backend error."""
        return self.flagged + self.skipped_flagged

    @property
    def unreadable_in_output(self) -> int:
        """Input lines that hold no dialogue (each has a row with its error in the output)."""
        return self.unreadable + self.skipped_unreadable

    @property
    def ok_in_output(self) -> int:
        """Input ids with a judgement (``judge_ok=1``) in the output."""
        return self.total - self.failed_in_output - self.flagged_in_output - self.unreadable_in_output


@dataclass(frozen=True)
class _Item:
    line: int
    id: str
    episode: EpisodeRecord | None
    error: str | None


def stored_status(output: Path) -> dict[str, int]:
    """``judge_ok`` of each id already in ``output``; the last line per id wins.

    Raises:
        InputError: ``FILE:LINE: ...`` for a line that is not a result line, except a last line
            a kill cut short (:func:`pearl_verl.jsonl.read_appended` skips that one).
    """
    if not output.exists():
        return {}
    status: dict[str, int] = {}
    for number, row in read_appended(input_file(output, "results file")):
        try:
            status[str(row["id"])] = int(row[JUDGE_OK_KEY])
        except (KeyError, TypeError, ValueError) as exc:
            raise located(output, number, f"not a judge result line ({type(exc).__name__}: {exc}).") from None
    return status


def done_ids(output: Path, retry_failed: bool) -> set[str]:
    """Ids already in ``output`` (only ``judge_ok=1`` ones when ``retry_failed``); the last line per id wins."""
    return {key for key, ok in stored_status(output).items() if ok or not retry_failed}


def read_items(path: Path) -> Iterator[_Item]:
    """Each input line as an item; malformed lines carry their error instead of an episode.

    Raises:
        InputError: when two lines share an id (results could not be told apart on resume).
    """
    seen: set[str] = set()
    with input_file(path, "dialogue file").open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            item = _parse_line(number, raw)
            if item.id in seen:
                message = f"{item.id!r} appears twice; give every dialogue a unique id."
                raise located(path, number, message, field="id")
            seen.add(item.id)
            yield item


def _parse_line(number: int, raw: bytes) -> _Item:
    name = f"line-{number}"
    try:
        data = parse_line(raw)
    except InputError as exc:  # not UTF-8 or not JSON: this line is flagged, the others are judged
        return _Item(number, name, None, str(exc))
    if not isinstance(data, dict):
        return _Item(number, name, None, f"expected a JSON object, got {type(data).__name__}")
    key = str(data["id"]) if data.get("id") is not None else name
    try:
        return _Item(number, key, EpisodeRecord.from_dict(data.get("episode", data)), None)
    except (KeyError, TypeError, ValueError) as exc:
        return _Item(number, key, None, f"not an episode record: {type(exc).__name__}: {exc}")


def result_row(item: _Item, result: JudgeResult | None, with_criteria: bool) -> dict[str, Any]:
    """The output line of one item."""
    error = (item.error or not_judged_reason(item.episode)) if result is None else result.error
    return stamped("judgement", {"id": item.id, "line": item.line,
                                 **judgement_fields(item.episode, result, with_criteria, error)})


def judgement_fields(
    episode: EpisodeRecord | None, result: JudgeResult | None, with_criteria: bool = True, error: str | None = None
) -> dict[str, Any]:
    """A judgement as ``pearl-verl judge`` writes it: the reward fields, gate, attempts, error, criteria.

    Args:
        episode: the judged dialogue (None when it could not be read).
        result: the judgement; None when the dialogue was not judged.
        with_criteria: add each criterion's dimension, id, raw and [0, 1] score and rationale.
        error: why there is no judgement, when ``result`` is None.
    """
    row: dict[str, Any] = dict(reward_info(episode, result))
    row["gate"] = result.gate if result is not None else None
    row["attempts"] = result.attempts if result is not None else 0
    row["error"] = error if result is None else result.error
    if with_criteria and result is not None:
        row["criteria"] = [
            {"dimension": c.dimension, "criterion": c.criterion, "raw": c.raw, "score": c.score,
             "rationale": c.rationale}
            for c in result.criteria
        ]
    return row


async def judge_file(
    judge: TutoringJudge,
    input_path: Path,
    output_path: Path,
    concurrency: int = 32,
    retry_failed: bool = False,
    with_criteria: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> BatchSummary:
    """Judge every not-yet-judged line of ``input_path``, appending results to ``output_path``.

    Args:
        judge: any :class:`TutoringJudge`.
        input_path: dialogues, one JSON object per line.
        output_path: results, appended (created if missing).
        concurrency: dialogues judged at once.
        retry_failed: judge again the ids whose last result has ``judge_ok=0`` (except episodes
            flagged for a backend error: no call could change them).
        with_criteria: also write the criterion scores and rationales.
        on_done: called with each written row (progress bars, tests).

    Raises:
        InputError: for ``concurrency < 1`` or duplicate ids in the input.
    """
    if concurrency < 1:
        raise InputError(f"concurrency={concurrency} must be >= 1.")
    stored = stored_status(output_path)
    summary = BatchSummary()
    queue: asyncio.Queue[_Item | None] = asyncio.Queue(maxsize=2 * concurrency)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    drop_cut_tail(output_path)
    with output_path.open("a", encoding="utf-8") as out:

        async def worker() -> None:
            while (item := await queue.get()) is not None:
                result = await _judge_one(judge, item)
                row = result_row(item, result, with_criteria)
                out.write(json_line(row, ensure_ascii=False))
                out.flush()
                _count(summary, item, row)
                if on_done is not None:
                    on_done(row)

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        try:
            for item in read_items(input_path):
                summary.total += 1
                if _already_done(item, stored.get(item.id), retry_failed):
                    _count_skipped(summary, item, stored[item.id])
                    continue
                await queue.put(item)
        except asyncio.CancelledError:
            # a stop: the dialogues in flight are dropped, not waited for; and no end marker is queued, since a
            # full queue that no cancelled worker empties would hold this task forever
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            if not any(task.cancelled() for task in workers):
                for _ in workers:  # an error in the input: the dialogues queued before it are judged and written
                    await queue.put(None)
                await asyncio.gather(*workers)
    return summary


def _already_done(item: _Item, stored_ok: int | None, retry_failed: bool) -> bool:
    """Whether the output's row for ``item`` stands (``stored_ok`` None: it has none)."""
    if stored_ok is None:
        return False
    if stored_ok or not retry_failed:
        return True
    # An unreadable line or a backend-failed episode would get the same row again without a call.
    return item.episode is None or not_judged_reason(item.episode) is not None


def _count_skipped(summary: BatchSummary, item: _Item, stored_ok: int) -> None:
    summary.skipped += 1
    if stored_ok:
        return
    if item.episode is None:
        summary.skipped_unreadable += 1
        summary.unreadable_lines.append(item.line)
    elif not_judged_reason(item.episode) is not None:
        summary.skipped_flagged += 1
    else:
        summary.skipped_failed += 1


async def _judge_one(judge: TutoringJudge, item: _Item) -> JudgeResult | None:
    if item.episode is None or not should_judge(item.episode):
        return None
    try:
        return await judge.judge(item.episode)
    except Exception as exc:  # the protocol forbids raising; a third-party judge that does must not stall the run
        logger.exception("judge raised on %s", item.id)
        return JudgeResult(ok=False, error=f"judge raised {type(exc).__name__}: {exc}")


def _count(summary: BatchSummary, item: _Item, row: dict[str, Any]) -> None:
    summary.judged += 1
    if row[JUDGE_OK_KEY]:
        summary.ok += 1
        for dimension in DIMENSIONS:
            summary.dim_sums[dimension] += row[dimension]
    elif item.episode is None:
        summary.unreadable += 1
        summary.unreadable_lines.append(item.line)
    elif not_judged_reason(item.episode) is not None:
        summary.flagged += 1
    else:
        summary.failed += 1

