"""Run tutors x simulators x matched items through the shared episode code, judge, and append results.

Each result line is written and flushed as soon as its dialogue is judged, so a run killed at any
moment loses at most the dialogues in flight; a line cut short by the kill is ignored, and dropped
when the run resumes (any other unreadable line is an error naming file and line). Re-running
with the same output skips every id already there (``retry_failed`` also re-runs flagged ones; the
last line per id wins when tables are built), so no dialogue is lost or counted twice.

A result line::

    {"id": "<tutor>|<simulator>|<item_id>", "tutor", "simulator", "item_id", "seed",
     "episode": EpisodeRecord.to_dict() | null, "error": str | null, "elapsed_s",
     "tutor_cut_replies": tutor messages the server cut at max_tokens,
     "judge": {8 dimensions, judge_ok, completed, tutor_turns, judge_latency_s, gate, attempts,
               error} | null}

``judge`` is null when the run has no judge; ``judge_ok=0`` flags a dialogue that could not be
scored (backend failure, unparsable judge output): it is excluded from every table, never scored 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.student_contract import StudentSimulator
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.dims import JUDGE_OK_KEY
from pearl_verl.errors import InputError, located
from pearl_verl.eval.protocol import EvalItem
from pearl_verl.jsonl import drop_cut_tail, input_file, json_line, read_appended
from pearl_verl.judge.judge_contract import JudgeResult, TutoringJudge
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS, not_judged_reason, reward_info, should_judge
from pearl_verl.row_kinds import stamped
from pearl_verl.tutor.policy import counting_cut_replies

logger = logging.getLogger(__name__)

RESULTS = "results.jsonl"


def result_id(tutor: str, simulator: str, item_id: str) -> str:
    """The id of one (tutor, simulator, item) dialogue."""
    return f"{tutor}|{simulator}|{item_id}"


def row_ok(row: Mapping[str, Any]) -> bool:
    """Whether a result line holds a usable dialogue (and, when judged, a judgement).

    A dialogue that ended ``student_error`` or ``tutor_error`` is not usable, judged or not
    (``--judge none``): its backend failed, so ``--retry-failed`` runs it again.
    """
    if row.get("episode") is None or row.get("error"):
        return False
    if row["episode"].get("end_reason") in FAILED_EPISODE_REASONS:
        return False
    judge = row.get("judge")
    return judge is None or bool(judge.get(JUDGE_OK_KEY))


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Result lines by id (the last line per id wins); empty for a missing file.

    A last line a kill cut short is skipped with a warning (:func:`pearl_verl.jsonl.read_appended`).

    Raises:
        InputError: ``FILE:LINE: ...`` for any other line that is not a JSON object with an ``id``.
    """
    if not path.exists():
        return {}
    return {str(row["id"]): row for _, row in _result_lines(path)}


TUTOR_RESULT_FIELDS = ("tutor", "simulator", "item_id", "episode")
"""Fields every eval-tutor result line has (``episode`` is null for a dialogue that failed)."""


def read_tutor_results(path: Path) -> dict[str, dict[str, Any]]:
    """The eval-tutor result lines of a file a user names (build-pairs, eval-rm, eval-mathdial), checked.

    Raises:
        InputError: for a missing path or a directory; ``FILE:LINE: field: ...`` for a line
            :func:`read_results` rejects, one without an eval-tutor field, or one whose episode
            is not an episode record.
    """
    rows: dict[str, dict[str, Any]] = {}
    for number, row in _result_lines(input_file(path, "eval-tutor results file")):
        missing = [name for name in TUTOR_RESULT_FIELDS if name not in row]
        if missing:
            raise located(path, number, "missing; not an eval-tutor result line.", field=missing[0])
        if row["episode"] is not None:
            try:
                EpisodeRecord.from_dict(row["episode"])
            except (KeyError, TypeError, ValueError) as exc:
                reason = f"not an episode record ({type(exc).__name__}: {exc})."
                raise located(path, number, reason, field="episode") from None
        rows[str(row["id"])] = row
    return rows


def _result_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, row in read_appended(input_file(path, "results file")):
        if not isinstance(row, dict):
            kind = type(row).__name__
            raise located(path, number, f"not a JSON object but a {kind}; a result line is one object.")
        if "id" not in row:
            raise located(path, number, "missing; every result line has one.", field="id")
        yield number, row


@dataclass(frozen=True)
class Job:
    """One dialogue to run."""

    tutor: str
    simulator: str
    item: EvalItem

    @property
    def id(self) -> str:
        return result_id(self.tutor, self.simulator, self.item.item_id)


def plan_jobs(items: Sequence[EvalItem], tutors: Sequence[str], simulators: Sequence[str]) -> list[Job]:
    """Every (item, simulator, tutor) job, item-major so a partial run covers tutors evenly."""
    return [Job(t, s, item) for item in items for s in simulators for t in tutors]


@dataclass
class RunSummary:
    """What one run did.

    Attributes:
        planned: jobs in the plan.
        skipped: jobs already done in the output (resume).
        ran: jobs run now.
        ok: of those, usable and (when judged) judged.
        flagged: of those, flagged (failed episode, failed judgement, or an error).
        end_reasons: count per episode end reason among the jobs run now.
    """

    planned: int = 0
    skipped: int = 0
    ran: int = 0
    ok: int = 0
    flagged: int = 0
    end_reasons: dict[str, int] = field(default_factory=dict)


async def run_eval(
    jobs: Sequence[Job],
    tutors: Mapping[str, TutorPolicy],
    simulators: Mapping[str, StudentSimulator],
    judge: TutoringJudge | None,
    limits: EpisodeLimits,
    output: Path,
    concurrency: int = 16,
    retry_failed: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunSummary:
    """Run every job not yet in ``output``, appending one line per finished dialogue.

    Args:
        jobs: the plan (:func:`plan_jobs`).
        tutors: policies by tutor name.
        simulators: student simulators by name.
        judge: scores each finished dialogue; None writes ``judge: null``.
        limits: the stopping rule every dialogue shares.
        output: the results JSONL (appended; created if missing).
        concurrency: dialogues in flight.
        retry_failed: run again the ids whose last line is flagged.
        on_done: called with each written line (progress bars, tests).
        on_start: called once with the number of jobs already done (progress bars).

    Raises:
        InputError: for ``concurrency < 1`` or a job naming an unknown tutor or simulator.
    """
    if concurrency < 1:
        raise InputError(f"concurrency={concurrency} must be >= 1.")
    for job in jobs:
        if job.tutor not in tutors or job.simulator not in simulators:
            raise InputError(f"job {job.id} names an unknown tutor or simulator.")
    existing = read_results(output)
    done = {key for key, row in existing.items() if row_ok(row) or not retry_failed}
    summary = RunSummary(planned=len(jobs))
    todo = [job for job in jobs if job.id not in done]
    summary.skipped = len(jobs) - len(todo)
    if on_start is not None:
        on_start(summary.skipped)
    output.parent.mkdir(parents=True, exist_ok=True)
    drop_cut_tail(output)
    queue: asyncio.Queue[Job | None] = asyncio.Queue()
    for job in todo:
        queue.put_nowait(job)
    with output.open("a", encoding="utf-8") as out:

        async def worker() -> None:
            while (job := await queue.get()) is not None:
                row = await _run_job(job, tutors[job.tutor], simulators[job.simulator], judge, limits)
                out.write(json_line(row, ensure_ascii=False))
                out.flush()
                _count(summary, row)
                if on_done is not None:
                    on_done(row)

        for _ in range(concurrency):
            queue.put_nowait(None)
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(todo)) or 1)))
    return summary


async def _run_job(
    job: Job, tutor: TutorPolicy, simulator: StudentSimulator, judge: TutoringJudge | None, limits: EpisodeLimits
) -> dict[str, Any]:
    start = time.perf_counter()
    row: dict[str, Any] = stamped("eval", {
        "id": job.id,
        "tutor": job.tutor,
        "simulator": job.simulator,
        "item_id": job.item.item_id,
        "seed": job.item.seed,
        "episode": None,
        "error": None,
        "judge": None,
    })
    item = job.item
    try:
        opening = simulator.opening(item.problem, item.condition)
        session = await simulator.start(item.problem, item.condition, item.seed, opening)
        with counting_cut_replies() as cut:
            episode = await run_episode(
                item.problem, item.condition, session, opening, policy_step(tutor, item.problem), limits
            )
        row["tutor_cut_replies"] = cut[0]
    except Exception as exc:  # a broken simulator or tutor must flag its dialogue, not stop the run
        logger.exception("dialogue %s raised", job.id)
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["elapsed_s"] = time.perf_counter() - start
        return row
    row["episode"] = episode.to_dict()
    if judge is not None:
        result = await _judge(judge, episode, job.id)
        info: dict[str, Any] = reward_info(episode, result)
        info["gate"] = result.gate if result is not None else None
        info["attempts"] = result.attempts if result is not None else 0
        info["error"] = result.error if result is not None else not_judged_reason(episode)
        row["judge"] = info
    row["elapsed_s"] = time.perf_counter() - start
    return row


async def _judge(judge: TutoringJudge, episode: EpisodeRecord, key: str) -> JudgeResult | None:
    if not should_judge(episode):
        return None
    try:
        return await judge.judge(episode)
    except Exception as exc:  # the protocol forbids raising; a third-party judge that does is flagged
        logger.exception("judge raised on %s", key)
        return JudgeResult(ok=False, error=f"judge raised {type(exc).__name__}: {exc}")


def _count(summary: RunSummary, row: Mapping[str, Any]) -> None:
    summary.ran += 1
    if row_ok(row):
        summary.ok += 1
    else:
        summary.flagged += 1
    reason = row["episode"]["end_reason"] if row.get("episode") else "error"
    summary.end_reasons[reason] = summary.end_reasons.get(reason, 0) + 1



def episodes_of(rows: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[Mapping[str, Any], EpisodeRecord]]:
    """(row, episode) for every result line that holds a dialogue."""
    for row in rows.values():
        if row.get("episode") is not None:
            yield row, EpisodeRecord.from_dict(row["episode"])
