"""Teacher-student dialogues for cold-start SFT, written as they finish (``pearl-verl gen-sft``).

A teacher model (any OpenAI-compatible endpoint, wrapped in :class:`~pearl_verl.tutor.policy.ChatTutor`;
DeepSeek-V3.2 in the paper) tutors the simulated student of each prepared row through
:func:`pearl_verl.dialogue.episode_runner.run_episode`, the episode code the RL agent loop runs, so SFT
dialogues follow the same turn-taking, stopping rules and prompts as training.

Jobs: every prepared row (problem, student condition, opening) times ``samples_per_row``; a job's
id is ``<problem id>|c<condition seed>|s<sample index>`` and the student's random seed is derived
from it, so a job gives the same dialogue whenever it runs (with deterministic backends).

Incremental and resumable: each finished dialogue is appended to the records JSONL and flushed at
once, as ``{"id", "sample", "episode": EpisodeRecord.to_dict(), "judge": reward fields | null}``.
A rerun reads the file, skips every id already there (a line cut short by a kill is ignored and
its job runs again) and appends only what is missing, so an interrupted run loses nothing and
repeats nothing. With ``retry_failed`` a dialogue that ended in a backend failure runs again; with
a judge, a dialogue recorded without a judgement is judged (not regenerated) and appended again;
the last line per id wins.
"""

from __future__ import annotations

import asyncio
import logging
import os
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import STUDENT, DialogueTurn, EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.dialogue.student_contract import StudentSimulator
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.errors import InputError
from pearl_verl.jsonl import end_with_newline, json_line
from pearl_verl.judge.judge_contract import TutoringJudge
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS, reward_info, should_judge
from pearl_verl.llm.chat_types import LLMCallError
from pearl_verl.row_kinds import stamped
from pearl_verl.sft.dataset import read_records

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """One dialogue to generate.

    Attributes:
        id: ``<problem id>|c<condition seed>|s<sample index>``.
        sample: the prepared row.
        sample_index: which of the row's samples this is.
    """

    id: str
    sample: PearlSample
    sample_index: int

    @property
    def seed(self) -> int:
        """The student's random seed for this dialogue (stable across runs)."""
        return zlib.crc32(f"pearl-sft|{self.id}".encode())


def load_samples(paths: Iterable[str | Path], limit: int | None = None) -> list[PearlSample]:
    """The rows of prepared parquet files (``pearl-verl prepare-data`` output), in file and row order.

    Raises:
        InputError: for a missing file or a row that is not a prepared pearl_tutor row (file, row).
    """
    from pearl_verl.data.sources import read_parquet_frame

    samples: list[PearlSample] = []
    for path in paths:
        frame = read_parquet_frame(path, "prepared data (from `pearl-verl prepare-data`)")
        missing = {"prompt", "extra_info"} - set(frame.columns)
        if missing:
            raise InputError(f"{path} lacks column(s) {sorted(missing)}; is it a `pearl-verl prepare-data` output?")
        for number, row in enumerate(frame.itertuples(index=False), start=1):
            try:
                samples.append(PearlSample.from_row(row.extra_info, list(row.prompt)))
            except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong type
                raise InputError(f"{path}: row {number}: {exc}") from None
    return samples[:limit] if limit is not None else samples


def make_jobs(samples: Sequence[PearlSample], samples_per_row: int = 1) -> list[Job]:
    """Every (row, sample index) as a job, in row order.

    Raises:
        InputError: for ``samples_per_row < 1`` or two rows with the same problem and condition seed.
    """
    if samples_per_row < 1:
        raise InputError(f"samples_per_row={samples_per_row} must be >= 1.")
    jobs = [
        Job(f"{s.problem.problem_id}|c{s.condition.seed}|s{k}", s, k) for s in samples for k in range(samples_per_row)
    ]
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        repeated = next(key for key in ids if ids.count(key) > 1)
        raise InputError(
            f"job id {repeated!r} repeats: two input rows share a problem and condition seed (the same file "
            "given twice?). Give each prepared file once."
        )
    return jobs


@dataclass
class GenerationStats:
    """What one run did.

    Attributes:
        jobs: dialogues asked for.
        resumed: already in the records file (not generated again).
        generated: dialogues generated in this run.
        judged_only: recorded dialogues judged in this run (a judge added on a rerun).
        backend_failures: dialogues of this run that ended in a teacher or student failure.
        crashed: jobs that raised an unexpected error (logged; nothing written for them).
    """

    jobs: int = 0
    resumed: int = 0
    generated: int = 0
    judged_only: int = 0
    backend_failures: int = 0
    crashed: int = 0


async def run_job(job: Job, simulator: StudentSimulator, tutor: TutorPolicy, limits: EpisodeLimits) -> EpisodeRecord:
    """One dialogue: the student starts from the row's condition and opening; the teacher tutors."""
    problem, condition, opening = job.sample.problem, job.sample.condition, job.sample.opening
    try:
        session = await simulator.start(problem, condition, job.seed, opening)
    except LLMCallError as exc:
        logger.warning("student simulator failed to start for %s: %s", job.id, exc)
        return EpisodeRecord(problem, condition, (DialogueTurn(STUDENT, opening),), (), "student_error")
    return await run_episode(problem, condition, session, opening, policy_step(tutor, problem), limits)


async def judge_fields(judge: TutoringJudge | None, episode: EpisodeRecord) -> dict[str, Any] | None:
    """The judge's reward fields plus ``judge_error`` (None without a judge)."""
    if judge is None:
        return None
    result = await judge.judge(episode) if should_judge(episode) else None
    info: dict[str, Any] = dict(reward_info(episode, result))
    info["judge_error"] = result.error if result is not None else "not judged: the dialogue failed"
    return info


async def generate(
    jobs: Sequence[Job],
    simulator: StudentSimulator,
    tutor: TutorPolicy,
    records_path: Path,
    judge: TutoringJudge | None = None,
    limits: EpisodeLimits = EpisodeLimits(),
    concurrency: int = 32,
    retry_failed: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> GenerationStats:
    """Generate every job not yet in ``records_path``, appending each record as soon as it is done.

    Args:
        jobs: the run's jobs.
        simulator: the student simulator.
        tutor: the teacher.
        records_path: the records JSONL (created; appended; resumed).
        judge: optional judge for the SFT judge gate; its fields are stored with each record.
        limits: episode limits (paper: 15 tutor turns).
        concurrency: dialogues in flight.
        retry_failed: generate again the dialogues recorded with a backend failure.
        on_done: called with each written record (progress bars, tests).

    Raises:
        InputError: for ``concurrency < 1``.
    """
    if concurrency < 1:
        raise InputError(f"concurrency={concurrency} must be >= 1.")
    records, _ = read_records(records_path)
    stats = GenerationStats(jobs=len(jobs))
    todo: list[tuple[Job, dict[str, Any] | None]] = []  # (job, record to judge only) per pending job
    for job in jobs:
        record = records.get(job.id)
        if record is None or (retry_failed and record["episode"]["end_reason"] in FAILED_EPISODE_REASONS):
            todo.append((job, None))
        elif judge is not None and record.get("judge") is None:
            todo.append((job, record))
        else:
            stats.resumed += 1
    records_path.parent.mkdir(parents=True, exist_ok=True)
    end_with_newline(records_path)
    pending = iter(todo)  # shared by the workers; asyncio runs one at a time, so each job is taken once
    with records_path.open("a", encoding="utf-8") as out:

        async def worker() -> None:
            for job, recorded in pending:
                try:
                    record = await _produce(job, recorded, simulator, tutor, judge, limits, stats)
                except Exception:  # a bug in a backend or simulator must not lose the other dialogues
                    stats.crashed += 1
                    logger.exception("generating %s raised; nothing recorded, a rerun tries it again", job.id)
                    continue
                out.write(json_line(record, ensure_ascii=False))
                out.flush()
                if on_done is not None:
                    on_done(record)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(todo))))))
        os.fsync(out.fileno())
    return stats


async def _produce(
    job: Job,
    recorded: dict[str, Any] | None,
    simulator: StudentSimulator,
    tutor: TutorPolicy,
    judge: TutoringJudge | None,
    limits: EpisodeLimits,
    stats: GenerationStats,
) -> dict[str, Any]:
    if recorded is not None:
        episode = EpisodeRecord.from_dict(recorded["episode"])
        stats.judged_only += 1
    else:
        episode = await run_job(job, simulator, tutor, limits)
        stats.generated += 1
        stats.backend_failures += int(episode.end_reason in FAILED_EPISODE_REASONS)
    return stamped("dialogue", {
        "id": job.id,
        "sample": job.sample_index,
        "episode": episode.to_dict(),
        "judge": await judge_fields(judge, episode),
    })

