"""The LLM judge: prompt an OpenAI-compatible endpoint, parse strictly, retry boundedly, gate.

HTTP-level failures (timeouts, connection errors, 429/5xx) are retried by the shared client
(:class:`pearl_verl.llm.OpenAIChatClient`) with its own bound. On top of that, a call whose
samples all fail to parse is repeated at most ``parse_retries`` times. When nothing parses, or
the endpoint fails for good, the judgement is returned with ``ok=False`` and the reason: it is
never replaced by a made-up score, and :meth:`LLMJudge.judge` never raises for a bad dialogue or
a failing endpoint.

Self-consistency: ``samples`` completions per dialogue (one request with ``n``, or separate
requests), aggregated per criterion by mean or median; samples that fail to parse are dropped.
A judgement uses exactly ``samples`` completions: a server that returns fewer is asked again for
the missing ones within the same ``parse_retries`` budget, and the judgement is flagged when they
never come; completions beyond those asked for are counted and ignored, never averaged in.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.judge.judge_contract import CriterionScore, JudgeResult
from pearl_verl.judge.parser import JudgeOutputError, parse_judgement
from pearl_verl.judge.prompt import judge_messages, judgement_schema
from pearl_verl.judge.rubric import RUBRIC, Rubric
from pearl_verl.judge.scoring import AGGREGATES, result_from_samples
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, Message, SamplingConfig

logger = logging.getLogger(__name__)

PAPER_JUDGE_SAMPLING = SamplingConfig(temperature=0.3, top_k=20, max_tokens=4096)
"""The paper's judge inference settings (appendix "Judge Agent", top-p 1), with room for 24 rationales."""
SAMPLES = 1
"""Judge calls per dialogue by default: self-consistency off."""
AGGREGATE = "mean"
"""How the samples' criterion scores combine by default."""
PARSE_RETRIES = 2
"""Extra calls by default when no sample of a call parses."""


@dataclass
class JudgeStats:
    """Counters of one judge's work, for logs and ``pearl/judge/*`` metrics.

    Attributes:
        judged: dialogues judged.
        failed: dialogues whose judgement failed (judge_ok=0).
        samples_requested: completions asked for (parse retries, refills and self-consistency included).
        samples_received: completions that came back, extras included.
        samples_ignored: completions beyond those asked for (a server ignoring ``n``), dropped.
        n_ignored: the endpoint answered a request for several samples (``n``) with one; from then
            on this judge asks for each sample in its own request.
        samples_parsed: completions that satisfied the output contract.
        parse_failures: unparsable completions by :data:`pearl_verl.judge.parser.PARSE_FAILURES` reason.
        failure_reasons: failed judgements by final reason (``llm_<reason>``, ``parse_<reason>``,
            ``samples_short``, ``internal``).
    """

    judged: int = 0
    failed: int = 0
    samples_requested: int = 0
    samples_received: int = 0
    samples_ignored: int = 0
    n_ignored: bool = False
    samples_parsed: int = 0
    parse_failures: dict[str, int] = field(default_factory=dict)
    failure_reasons: dict[str, int] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _count(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


@dataclass
class _SampleSet:
    """The samples of one judgement: the set being filled up to ``wanted``, and totals over sets.

    Attributes:
        wanted: samples one judgement averages (``samples``).
        in_set: completions counted into the current set so far.
        used: completions counted over every set (the result's ``attempts``).
        unparsed: of those, completions that failed to parse (the result's ``unparsed``).
        empty: of those, completions that came back with no content (and not cut off at the token limit).
        parsed: parsed judgements of the current set.
        last_error: the latest parse failure.
    """

    wanted: int
    in_set: int = 0
    used: int = 0
    unparsed: int = 0
    empty: int = 0
    parsed: list[tuple[CriterionScore, ...]] = field(default_factory=list)
    last_error: JudgeOutputError | None = None

    @property
    def missing(self) -> int:
        """Samples still to ask for before the current set is full."""
        return self.wanted - self.in_set

    def start_over(self) -> None:
        """A fresh set after one whose samples all failed to parse (a parse retry)."""
        self.in_set = 0
        self.parsed.clear()


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
        prompt: builds the chat messages of one dialogue; default :func:`judge_messages` (the whole
            dialogue). :func:`~pearl_verl.judge.prompt.one_turn_messages` judges its last turn only;
            both keep the output contract, so the same parser reads the reply.
    """

    def __init__(
        self,
        backend: ChatBackend,
        sampling: SamplingConfig | None = None,
        *,
        samples: int = SAMPLES,
        aggregate: str = AGGREGATE,
        parse_retries: int = PARSE_RETRIES,
        samples_per_request: bool = True,
        rubric: Rubric = RUBRIC,
        prompt: Callable[[EpisodeRecord, Rubric], list[Message]] = judge_messages,
    ) -> None:
        if samples < 1:
            raise InputError(f"samples={samples!r} must be >= 1.")
        if aggregate not in AGGREGATES:
            raise InputError(f"aggregate={aggregate!r} must be one of {list(AGGREGATES)}.")
        if parse_retries < 0:
            raise InputError(f"parse_retries={parse_retries!r} must be >= 0.")
        self.backend = backend
        base = sampling or PAPER_JUDGE_SAMPLING
        self.sampling = dataclasses.replace(
            base, n=samples if samples_per_request else 1, response_schema=judgement_schema(rubric)
        )
        self.samples = samples
        self.aggregate = aggregate
        self.parse_retries = parse_retries
        self.samples_per_request = samples_per_request
        self.rubric = rubric
        self.prompt = prompt
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
            return self._fail(f"internal judge error: {type(exc).__name__}: {exc}", "internal", None, start)

    async def _judge(self, episode: EpisodeRecord, start: float) -> JudgeResult:
        messages = self.prompt(episode, self.rubric)
        draws = _SampleSet(self.samples)
        for round_ in range(1 + self.parse_retries):
            if not draws.missing:
                draws.start_over()  # the last set was full but nothing parsed: a parse retry is a new set
            self.stats.samples_requested += draws.missing
            try:
                completions = await self._draw(messages, round_, draws.missing)
            except LLMCallError as exc:
                error = f"judge endpoint failed ({exc.reason}): {exc}"
                return self._fail(error, f"llm_{exc.reason}", draws, start)
            # Yield before parsing: the request slot this call just freed wakes a queued judgement,
            # which then goes out before this parse instead of after it. Under a burst of answers
            # (a server answering a full wave at once) this keeps parsing off the requests' path.
            await asyncio.sleep(0)
            for text, finish_reason in completions:
                self._parse_into(draws, text, finish_reason)
            if draws.missing:
                logger.debug("judge round %d: %d of %d samples so far", round_, draws.in_set, self.samples)
            elif draws.parsed:
                break
            else:
                logger.debug("judge round %d: no sample parsed (%s)", round_, draws.last_error)
        return self._conclude(draws, start)

    def _parse_into(self, draws: _SampleSet, text: str, finish_reason: str | None) -> None:
        """Count one completion into the current set, parsed or with its parse failure."""
        draws.in_set += 1
        draws.used += 1
        if not text.strip() and finish_reason != "length":
            draws.empty += 1
        try:
            draws.parsed.append(parse_judgement(text, self.rubric, finish_reason))
        except JudgeOutputError as exc:
            _count(self.stats.parse_failures, exc.reason)
            draws.unparsed += 1
            draws.last_error = exc
            return
        self.stats.samples_parsed += 1

    def _conclude(self, draws: _SampleSet, start: float) -> JudgeResult:
        """The judgement once the rounds are over: a full set with a parsed sample, or a flag."""
        if draws.missing:
            # Averaging fewer samples than configured would silently change the estimator (more
            # variance, a different gate majority), so a short set is a failure, not a score.
            error = (
                f"judge endpoint returned {draws.in_set} of {self.samples} samples within "
                f"{1 + self.parse_retries} request round(s); not averaging fewer"
            )
            return self._fail(error, "samples_short", draws, start)
        if not draws.parsed and draws.empty == draws.used:  # nothing to parse came back: the endpoint's failure
            return self._fail(self._empty_replies(draws.used), "llm_empty_reply", draws, start)
        if not draws.parsed:
            assert draws.last_error is not None
            return self._fail(
                f"no parsable judge output in {draws.used} sample(s): {draws.last_error}",
                f"parse_{draws.last_error.reason}",
                draws,
                start,
            )
        latency = time.perf_counter() - start
        result = result_from_samples(draws.parsed, self.aggregate, self.rubric, draws.used, latency)
        return dataclasses.replace(result, unparsed=draws.unparsed)

    def _empty_replies(self, count: int) -> str:
        """The error of a judgement whose every reply came back empty: it names the endpoint, whose fault it is (an
        empty reply is no judgement a stronger judge model could have made better)."""
        where = getattr(getattr(self.backend, "endpoint", None), "base_url", None) or "the judge endpoint"
        return (f"judge endpoint failed (empty_reply): every reply from {where} was empty ({count} replies); check the "
                "server's log, its chat template and its reasoning parser (one that takes the whole reply as reasoning "
                "leaves the content empty)")

    async def _draw(self, messages: list[Message], round_: int, count: int) -> list[tuple[str, str | None]]:
        """``count`` new samples as ``(text, finish_reason)``, fewer if the server sent fewer.

        Raises:
            LLMCallError: when no sample came back.
        """
        offset = round_ * self.samples  # a set seed moves on per round, so a refill is a new draw
        if not self.samples_per_request or self.stats.n_ignored:
            return await self._draw_apart(messages, offset, count)
        result = await self.backend.chat(messages, self._seeded(offset, count))
        reasons = result.finish_reasons or (None,) * len(result.texts)
        completions = self._keep(list(zip(result.texts, reasons, strict=False)), count)
        if count > 1 and len(result.texts) == 1:  # llama-cpp-python's server, for one, ignores n
            self._switch_to_separate_requests(count)
            try:
                completions += await self._draw_apart(messages, offset + 1, count - 1)
            except LLMCallError as exc:  # the set stays short; the next round asks for the rest
                logger.debug("judge: the separate requests for the rest of a set failed: %s", exc)
        return completions

    def _switch_to_separate_requests(self, asked: int) -> None:
        if not self.stats.n_ignored:
            self.stats.n_ignored = True
            logger.warning("the judge endpoint ignores n (1 sample for n=%d); asking for each sample in its own "
                           "request from now on", asked)

    async def _draw_apart(self, messages: list[Message], offset: int, count: int) -> list[tuple[str, str | None]]:
        """``count`` samples as separate requests; one that failed for good is just missing."""
        calls = [self.backend.chat(messages, self._seeded(offset + i, 1)) for i in range(count)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if not isinstance(error, LLMCallError):
                raise error
        answers = [r for r in results if not isinstance(r, BaseException)]
        if not answers:
            raise errors[0]
        self._note_received(sum(len(r.texts) for r in answers), len(answers))
        return [(r.text, r.finish_reasons[0] if r.finish_reasons else None) for r in answers]

    def _keep(self, completions: list[tuple[str, str | None]], count: int) -> list[tuple[str, str | None]]:
        """The first ``count`` completions of one response; the rest are counted and dropped."""
        kept = completions[:count]
        self._note_received(len(completions), len(kept))
        return kept

    def _note_received(self, received: int, kept: int) -> None:
        self.stats.samples_received += received
        if received > kept:
            self.stats.samples_ignored += received - kept
            logger.warning("judge endpoint returned %d samples for %d asked for; ignored the rest", received, kept)

    def _seeded(self, offset: int, n: int) -> SamplingConfig:
        """The sampling of one request for ``n`` samples; a set seed moves on per request (new draws)."""
        seed = None if self.sampling.seed is None else self.sampling.seed + offset
        return dataclasses.replace(self.sampling, seed=seed, n=n)

    def _fail(self, error: str, reason: str, draws: _SampleSet | None, start: float) -> JudgeResult:
        self.stats.failed += 1
        _count(self.stats.failure_reasons, reason)
        logger.warning("judgement failed (%s): %s", reason, error)
        used, unparsed = (draws.used, draws.unparsed) if draws is not None else (0, 0)
        return JudgeResult(ok=False, error=error, reason=reason, attempts=used, unparsed=unparsed,
                           latency_s=time.perf_counter() - start)
