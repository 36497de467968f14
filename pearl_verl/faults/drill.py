"""The fault drill: a rollout + judge + advantage batch against flaky student and judge endpoints.

One run (:func:`run_drill`), every stage through the package's real code paths:

1. Rollout. ``groups x group_size`` episodes (problems from the shipped GSM8K and MathDial fixtures,
   one student condition per group, one student seed per member) through
   :func:`pearl_verl.dialogue.episode_runner.run_episode` with the scripted Socratic tutor and the PEARL
   student simulator, backend ``llm``, talking to a :class:`~pearl_verl.faults.server.FaultServer`
   whose healthy answers come from :func:`~pearl_verl.faults.responders.student_reply`. Each
   finished episode is appended to ``episodes.jsonl`` at once.
2. Judging, killed. ``pearl-verl judge`` (the real command, in a child process) scores
   ``episodes.jsonl`` into ``scores.jsonl`` against a faulty judge endpoint and is killed with
   SIGKILL once ``kill_after`` rows are written.
3. Judging, resumed. :func:`pearl_verl.judge.batch.judge_file` with the
   :class:`~pearl_verl.judge.llm_judge.LLMJudge` from :func:`~pearl_verl.judge.judge_config.build_judge`
   resumes the same output against a second faulty judge endpoint (so its request log covers this
   run only, which a :class:`~pearl_verl.faults.recording.RecordingBackend` also records).
4. Advantage. The final rows go through :func:`pearl_verl.advantage.inputs.inputs_from_rows` and the
   PEARL estimator with default settings, one group per problem and condition.

:mod:`pearl_verl.faults.checks` then checks the report: the batch completed, each sample is scored
or flagged, flagged samples have zero advantage, retries stayed within their bounds, outcomes match
the injected faults, and nothing computed before the kill was lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import breakdown_from_inputs, inputs_from_rows
from pearl_verl.async_run import run_async
from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.sources import SourceItem, load_source
from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.student_contract import StudentCondition
from pearl_verl.errors import InputError
from pearl_verl.faults.plan import FaultConfig, Injection
from pearl_verl.faults.recording import CallRecord, RecordingBackend, tagged
from pearl_verl.faults.responders import judge_reply, student_reply
from pearl_verl.faults.server import FaultServer
from pearl_verl.jsonl import json_line
from pearl_verl.judge.batch import BatchSummary, judge_file
from pearl_verl.judge.judge_config import JudgeConfig, build_judge
from pearl_verl.llm.chat_types import EndpointConfig
from pearl_verl.llm.client import OpenAIChatClient
from pearl_verl.row_kinds import stamped
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.tutor.scripted import ScriptedSocraticTutor

logger = logging.getLogger(__name__)

FIXTURES = Path(__file__).resolve().parents[1] / "resources" / "data"
STUDENT_MODEL, JUDGE_MODEL = "drill-student", "drill-judge"
BACKOFF_S, BACKOFF_MAX_S = 0.02, 0.1  # short retry waits keep the drill fast; the retry logic is the same


@dataclass(frozen=True)
class DrillConfig:
    """Settings of one drill.

    Attributes:
        groups: problems (each with its own student condition), one group each.
        group_size: episodes per group (verl's rollout ``n``).
        fault_rate: fault probability per request on both endpoints, split evenly over every
            fault kind.
        seed: seeds conditions, member seeds, both fault plans and retry jitter.
        max_tutor_turns: tutor-turn limit of an episode.
        concurrency: episodes in flight during rollout; dialogues in flight while judging.
        timeout_s: per-attempt timeout of both clients; a ``timeout`` fault holds a request 0.5 s
            longer. Generous, so that a slow but healthy answer on a loaded 2-core machine is
            never mistaken for an injected timeout.
        student_max_retries: HTTP retries of the student client.
        judge_max_retries: HTTP retries of the judge client.
        judge_parse_retries: extra judge calls when a completion does not parse (empty content).
        kill_after: judged rows after which the first judge run is killed (must be fewer than
            the episodes).
    """

    groups: int = 64
    group_size: int = 8
    fault_rate: float = 0.2
    seed: int = 0
    max_tutor_turns: int = 8
    concurrency: int = 64
    timeout_s: float = 3.0
    student_max_retries: int = 2
    judge_max_retries: int = 1
    judge_parse_retries: int = 1
    kill_after: int = 96

    def __post_init__(self) -> None:
        if self.groups < 1 or self.group_size < 2:
            raise InputError(
                f"groups={self.groups}, group_size={self.group_size}: need >= 1 group of >= 2 episodes "
                "(the advantage compares members of a group)."
            )
        if not 0.0 <= self.fault_rate <= 1.0:
            raise InputError(f"fault_rate={self.fault_rate} must lie in [0, 1] (0.2 = 20% of requests).")
        if not 1 <= self.kill_after < self.episodes:
            raise InputError(
                f"kill_after={self.kill_after} must lie in [1, {self.episodes}) so the judge run is killed "
                "before it finishes."
            )
        for name in ("concurrency", "max_tutor_turns"):
            if getattr(self, name) < 1:
                raise InputError(f"DrillConfig.{name}={getattr(self, name)} must be >= 1.")
        for name in ("student_max_retries", "judge_max_retries", "judge_parse_retries"):
            if getattr(self, name) < 0:
                raise InputError(f"DrillConfig.{name}={getattr(self, name)} must be >= 0.")

    @property
    def episodes(self) -> int:
        return self.groups * self.group_size

    def faults(self, seed_offset: int) -> FaultConfig:
        """The fault settings of one endpoint."""
        return FaultConfig.uniform(self.fault_rate, seed=self.seed + seed_offset, hold_s=self.timeout_s + 0.5)


@dataclass(frozen=True)
class DrillEpisode:
    """One rollout episode: its id (the results file key), group id and record."""

    id: str
    group: str
    record: EpisodeRecord


@dataclass(frozen=True)
class KilledRun:
    """The first judge run.

    Attributes:
        killed: whether it was still running when killed (False: it finished first).
        lines: the complete result lines in the output when it was killed, by id.
        requests: requests its judge endpoint received.
        seconds: wall time until the kill.
    """

    killed: bool
    lines: dict[str, str]
    requests: int
    seconds: float


@dataclass(frozen=True)
class DrillReport:
    """Everything a drill produced (see :mod:`pearl_verl.faults.checks` for what is checked).

    Attributes:
        config: the settings.
        episodes: the rollout, in episode order.
        lines: the final results file, line by line (without newlines).
        rows: the final result row of each episode id (the last parsable line per id).
        advantages: (episodes,) PEARL advantage per episode, in episode order.
        valid: (episodes,) whether the estimator counted the episode (``judge_ok=1``).
        student_injections: the student endpoint's request log.
        judge_injections: the resumed judge run's endpoint request log.
        student_calls: logical student calls, tagged with episode ids.
        judge_calls: logical judge calls of the resumed run.
        killed_run: the killed judge run.
        resumed: what the resumed run did.
        seconds: wall time per stage.
    """

    config: DrillConfig
    episodes: tuple[DrillEpisode, ...]
    lines: tuple[str, ...]
    rows: dict[str, dict[str, Any]]
    advantages: tuple[float, ...]
    valid: tuple[bool, ...]
    student_injections: tuple[Injection, ...]
    judge_injections: tuple[Injection, ...]
    student_calls: tuple[CallRecord, ...]
    judge_calls: tuple[CallRecord, ...]
    killed_run: KilledRun
    resumed: BatchSummary
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Spec:
    id: str
    group: str
    item: SourceItem
    condition: StudentCondition
    seed: int


def drill_items(count: int) -> list[SourceItem]:
    """``count`` problems from the shipped fixtures: GSM8K first, then MathDial (with misconceptions)."""
    gsm8k, _ = load_source(FIXTURES / "gsm8k" / "test_first50.jsonl", "gsm8k")
    mathdial, _ = load_source(FIXTURES / "mathdial" / "test_first20.jsonl", "mathdial")
    pool = gsm8k + mathdial
    return [pool[i % len(pool)] for i in range(count)]


def _specs(config: DrillConfig) -> list[_Spec]:
    rng = random.Random(config.seed)
    sampler = ConditionSampler()
    specs = []
    for g, item in enumerate(drill_items(config.groups)):
        condition = sampler.sample(rng, item.misconception)
        for m in range(config.group_size):
            specs.append(_Spec(f"g{g:03d}-m{m}", f"g{g:03d}", item, condition, rng.randrange(2**31)))
    return specs


def run_drill(config: DrillConfig, workdir: Path) -> DrillReport:
    """Run the drill in ``workdir`` (created; holds ``episodes.jsonl`` and ``scores.jsonl``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    episodes_path, scores_path = workdir / "episodes.jsonl", workdir / "scores.jsonl"
    for path in (episodes_path, scores_path):
        path.unlink(missing_ok=True)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    with FaultServer(student_reply, config.faults(0), STUDENT_MODEL) as student_server:
        episodes, student = run_async(_rollout(config, student_server.base_url, episodes_path))
    seconds["rollout"] = time.perf_counter() - start
    start = time.perf_counter()
    with FaultServer(judge_reply, config.faults(1), JUDGE_MODEL) as killed_server:
        killed = _killed_judge_run(config, killed_server.base_url, episodes_path, scores_path, workdir)
    seconds["killed_judge_run"] = time.perf_counter() - start
    start = time.perf_counter()
    with FaultServer(judge_reply, config.faults(2), JUDGE_MODEL) as judge_server:
        judge, resumed = run_async(_resume_judging(config, judge_server.base_url, episodes_path, scores_path))
    seconds["resumed_judge_run"] = time.perf_counter() - start
    lines = tuple(scores_path.read_text(encoding="utf-8").splitlines())
    rows = final_rows(lines)
    start = time.perf_counter()
    advantages, valid = drill_advantages(episodes, rows)
    seconds["advantage"] = time.perf_counter() - start
    logger.info("fault drill: %d episodes, %d scored, stage times %s", len(episodes), sum(valid), seconds)
    return DrillReport(
        config=config,
        episodes=tuple(episodes),
        lines=lines,
        rows=rows,
        advantages=advantages,
        valid=valid,
        student_injections=tuple(student_server.injections),
        judge_injections=tuple(judge_server.injections),
        student_calls=tuple(student.calls),
        judge_calls=tuple(judge.calls),
        killed_run=dataclasses.replace(killed, requests=len(killed_server.injections)),
        resumed=resumed,
        seconds=seconds,
    )


def _client(endpoint: EndpointConfig, config: DrillConfig, model: str, sampling: Any) -> RecordingBackend:
    fast = dataclasses.replace(endpoint, backoff_s=BACKOFF_S, backoff_max_s=BACKOFF_MAX_S)
    return RecordingBackend(OpenAIChatClient(fast, sampling, seed=config.seed), model)


async def _rollout(config: DrillConfig, base_url: str, out_path: Path) -> tuple[list[DrillEpisode], RecordingBackend]:
    student_config = StudentConfig(
        backend="llm",
        base_url=base_url,
        model=STUDENT_MODEL,
        decomposer="rules",
        timeout_s=config.timeout_s,
        max_retries=config.student_max_retries,
        max_concurrency=config.concurrency,
    )
    backend = _client(student_config.endpoint(), config, STUDENT_MODEL, student_config.sampling())
    simulator = build_simulator(student_config, backend)
    tutor, limits = ScriptedSocraticTutor(), EpisodeLimits(config.max_tutor_turns)
    slots = asyncio.Semaphore(config.concurrency)

    with out_path.open("w", encoding="utf-8") as out:

        async def one(spec: _Spec) -> DrillEpisode:
            problem, condition = spec.item.problem, spec.condition
            async with slots:
                with tagged(spec.id):
                    opening = simulator.opening(problem, condition)
                    session = await simulator.start(problem, condition, spec.seed, opening)
                    record = await run_episode(
                        problem, condition, session, opening, policy_step(tutor, problem), limits
                    )
            out.write(json_line(stamped("dialogue", {"id": spec.id, "group": spec.group, "episode": record.to_dict()})))
            out.flush()
            return DrillEpisode(spec.id, spec.group, record)

        episodes = await asyncio.gather(*(one(spec) for spec in _specs(config)))
    return list(episodes), backend


def _killed_judge_run(
    config: DrillConfig, base_url: str, episodes_path: Path, scores_path: Path, workdir: Path
) -> KilledRun:
    """``pearl-verl judge`` in a child process, SIGKILLed after ``kill_after`` result lines."""
    command = [
        sys.executable, "-m", "pearl_verl.cli", "judge", str(episodes_path), "-o", str(scores_path),
        "--base-url", base_url, "--model", JUDGE_MODEL, "--concurrency", str(config.concurrency),
        "--timeout", str(config.timeout_s), "--max-retries", str(config.judge_max_retries),
        "--parse-retries", str(config.judge_parse_retries), "--no-progress",
    ]  # fmt: skip
    package_root = str(Path(__file__).resolve().parents[2])  # importable even without an install
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    with (workdir / "killed_judge_run.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            while process.poll() is None and _complete_lines(scores_path) < config.kill_after:
                time.sleep(0.005)
        finally:
            killed = process.poll() is None
            process.kill()
            process.wait()
    seconds = time.perf_counter() - start
    lines = {}
    for line in _read_complete(scores_path):
        try:
            lines[str(json.loads(line)["id"])] = line
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return KilledRun(killed, lines, 0, seconds)


def _read_complete(path: Path) -> list[str]:
    """The newline-terminated lines of ``path`` (a line being written is not one yet)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return text.split("\n")[:-1]


def _complete_lines(path: Path) -> int:
    return len(_read_complete(path))


async def _resume_judging(
    config: DrillConfig, base_url: str, episodes_path: Path, scores_path: Path
) -> tuple[RecordingBackend, BatchSummary]:
    judge_config = JudgeConfig(
        backend="llm",
        base_url=base_url,
        model=JUDGE_MODEL,
        timeout_s=config.timeout_s,
        max_retries=config.judge_max_retries,
        max_concurrency=config.concurrency,
        parse_retries=config.judge_parse_retries,
        seed=config.seed,
    )
    judge = build_judge(judge_config)
    backend = _client(judge_config.endpoint(), config, JUDGE_MODEL, judge_config.sampling())
    judge.backend = backend  # the same client settings with drill backoffs, recorded
    summary = await judge_file(judge, episodes_path, scores_path, concurrency=config.concurrency)
    return backend, summary


def final_rows(lines: tuple[str, ...] | list[str]) -> dict[str, dict[str, Any]]:
    """The last parsable result row per id (what a resumed ``judge_file`` considers done)."""
    rows: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the kill
        rows[str(row["id"])] = row
    return rows


def drill_advantages(
    episodes: list[DrillEpisode] | tuple[DrillEpisode, ...], rows: dict[str, dict[str, Any]]
) -> tuple[tuple[float, ...], tuple[bool, ...]]:
    """The PEARL advantage (default settings) of each episode from its final row, in episode order.

    Raises:
        KeyError: when an episode has no row (checked by :func:`pearl_verl.faults.checks.check_complete`).
    """
    config = AdvantageConfig()
    ordered = [rows[e.id] for e in episodes]
    inputs = inputs_from_rows(ordered, config, labels=[e.id for e in episodes])
    breakdown = breakdown_from_inputs(inputs, [e.group for e in episodes], config)
    return tuple(float(a) for a in breakdown.advantages.tolist()), tuple(bool(v) for v in breakdown.valid.tolist())
