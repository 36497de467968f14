"""The LLM judge: prompt an OpenAI-compatible endpoint, parse strictly, retry boundedly, gate.

HTTP-level failures (timeouts, connection errors, 429/5xx) are retried by the shared client
(:class:`pearl_verl.llm.OpenAIChatClient`) with its own bound. On top of that, a call whose
samples all fail to parse is repeated at most ``parse_retries`` times. When nothing parses, or
the endpoint fails for good, the judgement is returned with ``ok=False`` and the reason: it is
never replaced by a made-up score, and :meth:`LLMJudge.judge` never raises for a bad dialogue or
a failing endpoint.

Self-consistency: ``samples`` completions per dialogue (one request with ``n``, or separate
requests), aggregated per criterion by mean or median; samples that fail to parse are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pearl_verl.episode import EpisodeRecord
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement
from pearl_verl.judge.prompt import judge_messages
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.scoring import AGGREGATES, result_from_samples
from pearl_verl.judge.types import CriterionScore, JudgeResult
from pearl_verl.llm.types import ChatBackend, LLMCallError, Message, SamplingConfig

logger = logging.getLogger(__name__)

PAPER_JUDGE_SAMPLING = SamplingConfig(temperature=0.3, top_p=1.0, top_k=20, max_tokens=4096)
"""The paper's judge inference settings (appendix "Judge Agent"), with room for 24 rationales."""


@dataclass
class JudgeStats:
    """Counters of one judge's work, for logs and ``pearl/judge/*`` metrics.

    Attributes:
        judged: dialogues judged.
        failed: dialogues whose judgement failed (judge_ok=0).
        samples_requested: completions asked for (parse retries and self-consistency included).
        samples_parsed: completions that satisfied the output contract.
        parse_failures: unparsable completions by :data:`pearl_verl.judge.parser.PARSE_FAILURES` reason.
        failure_reasons: failed judgements by final reason (``llm_<reason>``, ``parse_<reason>``,
            ``internal``).
    """

    judged: int = 0
    failed: int = 0
    samples_requested: int = 0
    samples_parsed: int = 0
    parse_failures: dict[str, int] = field(default_factory=dict)
    failure_reasons: dict[str, int] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _count(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


class LLMJudge:
    """Judges dialogues with a generative judge model behind a :class:`ChatBackend`.

    Args:
        backend: the chat backend; :class:`pearl_verl.llm.OpenAIChatClient` in real runs (it owns
            the timeout, HTTP retries, concurrency limit and usage counters).
        sampling: judge sampling; ``n`` is replaced by ``samples`` when samples share a request.
            Default: the paper's (temperature 0.3, top_p 1.0, top_k 20).
        samples: self-consistency samples per dialogue.
        aggregate: ``mean`` or ``median`` per criterion over parsed samples.
        parse_retries: extra calls when no sample of a call parses.
        samples_per_request: one request with ``n=samples`` (True) or ``samples`` requests.
        rubric: the rubric to prompt with and parse against.
    """

    def __init__(
        self,
        backend: ChatBackend,
        sampling: SamplingConfig | None = None,
        *,
        samples: int = 1,
        aggregate: str = "mean",
        parse_retries: int = 2,
        samples_per_request: bool = True,
        rubric: Rubric = RUBRIC,
    ) -> None:
        if samples < 1:
            raise ValueError(f"samples={samples!r} must be >= 1.")
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate={aggregate!r} must be one of {list(AGGREGATES)}.")
        if parse_retries < 0:
            raise ValueError(f"parse_retries={parse_retries!r} must be >= 0.")
        self.backend = backend
        base = sampling or PAPER_JUDGE_SAMPLING
        self.sampling = dataclasses.replace(base, n=samples if samples_per_request else 1)
        self.samples = samples
        self.aggregate = aggregate
        self.parse_retries = parse_retries
        self.samples_per_request = samples_per_request
        self.rubric = rubric
        self.stats = JudgeStats()

    @property
    def usage(self) -> dict[str, Any]:
        """The backend's HTTP usage counters (calls, retries, tokens, latency), if it keeps any."""
        meter = getattr(self.backend, "usage", None)
        return meter.snapshot() if meter is not None else {}

    async def judge(self, episode: EpisodeRecord) -> JudgeResult:
        """Judge one dialogue; failures come back as ``ok=False`` with ``error``, never raised."""
        start = time.perf_counter()
        self.stats.judged += 1
        try:
            return await self._judge(episode, start)
        except Exception as exc:  # a bug or an unforeseen input must not crash a training batch
            logger.exception("judge failed unexpectedly on %s", getattr(episode.problem, "problem_id", "?"))
            return self._fail(f"internal judge error: {type(exc).__name__}: {exc}", "internal", 0, start)

    async def _judge(self, episode: EpisodeRecord, start: float) -> JudgeResult:
        messages = judge_messages(episode, self.rubric)
        parsed: list[tuple[CriterionScore, ...]] = []
        attempts, last_error = 0, None
        for round_ in range(1 + self.parse_retries):
            attempts += self.samples
            try:
                completions = await self._draw(messages, round_)
            except LLMCallError as exc:
                return self._fail(f"judge endpoint failed ({exc.reason}): {exc}", f"llm_{exc.reason}", attempts, start)
            # Yield before parsing: the request slot this call just freed wakes a queued judgement,
            # which then goes out before this parse instead of after it. Under a burst of answers
            # (a server answering a full wave at once) this keeps parsing off the requests' path.
            await asyncio.sleep(0)
            for text, finish_reason in completions:
                try:
                    parsed.append(parse_judgement(text, self.rubric, finish_reason))
                except JudgeOutputError as exc:
                    _count(self.stats.parse_failures, exc.reason)
                    last_error = exc
            if parsed:
                break
            logger.debug("judge round %d: no sample parsed (%s)", round_, last_error)
        self.stats.samples_requested += attempts
        self.stats.samples_parsed += len(parsed)
        if not parsed:
            assert last_error is not None
            return self._fail(
                f"no parsable judge output in {attempts} sample(s): {last_error}",
                f"parse_{last_error.reason}",
                attempts,
                start,
                counted=True,
            )
        return result_from_samples(parsed, self.aggregate, self.rubric, attempts, time.perf_counter() - start)

    async def _draw(self, messages: list[Message], round_: int) -> list[tuple[str, str | None]]:
        """One round of samples as ``(text, finish_reason)``; raises LLMCallError if none came back."""
        if self.samples_per_request:
            result = await self.backend.chat(messages, self._seeded(round_ * self.samples))
            reasons = result.finish_reasons or (None,) * len(result.texts)
            return list(zip(result.texts, reasons, strict=False))
        calls = [self.backend.chat(messages, self._seeded(round_ * self.samples + i)) for i in range(self.samples)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if not isinstance(error, LLMCallError):
                raise error
        completions = [
            (r.text, r.finish_reasons[0] if r.finish_reasons else None)
            for r in results
            if not isinstance(r, BaseException)
        ]
        if not completions:
            raise errors[0]
        return completions

    def _seeded(self, offset: int) -> SamplingConfig:
        """The sampling of one request; a set seed moves on per request so retries are new draws."""
        if self.sampling.seed is None:
            return self.sampling
        return dataclasses.replace(self.sampling, seed=self.sampling.seed + offset)

    def _fail(self, error: str, reason: str, attempts: int, start: float, counted: bool = False) -> JudgeResult:
        if not counted:
            self.stats.samples_requested += attempts
        self.stats.failed += 1
        _count(self.stats.failure_reasons, reason)
        logger.warning("judgement failed (%s): %s", reason, error)
        return JudgeResult(ok=False, error=error, attempts=attempts, latency_s=time.perf_counter() - start)
