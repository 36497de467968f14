"""Decompose problems once: memory and disk cache, one in-flight extraction per problem, fallbacks.

Order of look-ups for a problem: the in-process memory (so every member of a group gets the same
units and therefore the same initial mastery), the disk cache, then extraction. Concurrent requests
for the same problem in one event loop share a single extraction.

Failure policy (never a crash inside a training batch):
- an LLM reply off the schema is retried with the error quoted, up to ``max_attempts`` calls;
- when every attempt fails, or the endpoint fails for good (``LLMCallError``), the rule extractor
  is used instead (``source="fallback"``), logged, counted in ``stats["fallbacks"]`` and kept in
  memory only, so a later run tries the LLM again;
- an unreadable or invalid cache file is logged, counted and replaced.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import Counter

from pearl_verl.dialogue.problem import Problem
from pearl_verl.errors import InputError
from pearl_verl.knowledge.cache import DecompositionCache
from pearl_verl.knowledge.curriculum import Curriculum
from pearl_verl.knowledge.decomposition import Decomposition, DecompositionError, content_hash, reference_steps
from pearl_verl.knowledge.extract import (
    EXTRACTION_PROMPT_VERSION,
    RULE_EXTRACTOR,
    extraction_messages,
    extraction_schema,
    parse_extraction,
    repair_message,
    rule_decomposition,
)
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, SamplingConfig

logger = logging.getLogger(__name__)

EXTRACTION_SAMPLING = SamplingConfig(temperature=0.0, max_tokens=1024)
"""Greedy decoding, so re-running an extraction gives the same units wherever the server allows.

``max_tokens``: a valid reply lists the units of every reference step, so it grows with the
solution: 61 tokens at the median over GSM8K test and MATH500, 261 at p99, 526 for MATH500's
longest (29 steps), which 512 cut into a parse failure (``bench/reply_lengths.py``). 1024 holds
twice that."""


class Decomposer:
    """Turns problems into decompositions.

    Args:
        curriculum: the vocabulary and rules.
        backend: the extraction LLM; None uses the rule extractor (offline).
        model: the extraction model's name (part of the cache key); required with ``backend``.
        cache: a disk cache, or None.
        max_attempts: LLM calls per problem before falling back (>= 1).
    """

    def __init__(
        self,
        curriculum: Curriculum,
        backend: ChatBackend | None = None,
        model: str | None = None,
        cache: DecompositionCache | None = None,
        max_attempts: int = 2,
    ):
        if backend is not None and not model:
            raise InputError("Decomposer needs model=<served model name> with an LLM backend (it keys the cache).")
        if max_attempts < 1:
            raise InputError(f"max_attempts={max_attempts} must be >= 1.")
        self.curriculum = curriculum
        self.backend = backend
        self.cache = cache
        self.max_attempts = max_attempts
        self.extractor = RULE_EXTRACTOR if backend is None else f"llm:{model}:{EXTRACTION_PROMPT_VERSION}"
        self.stats: Counter[str] = Counter()
        self._memory: dict[str, Decomposition] = {}
        self._inflight: dict[str, asyncio.Future[tuple[Decomposition, int]]] = {}

    def key(self, problem: Problem) -> str:
        return content_hash(problem, self.curriculum, self.extractor)

    async def decompose(self, problem: Problem) -> tuple[Decomposition, int]:
        """The problem's decomposition and the LLM calls this request made (0 on any cache hit)."""
        key = self.key(problem)
        if key in self._memory:
            self.stats["memory_hits"] += 1
            return self._memory[key], 0
        cached = self._from_disk(key)
        if cached is not None:
            self._memory[key] = cached
            return cached, 0
        pending = self._inflight.get(key)
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            self.stats["shared_inflight"] += 1
            decomposition, _ = await asyncio.shield(pending)
            return decomposition, 0
        future: asyncio.Future[tuple[Decomposition, int]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await self._extract(problem)
            future.set_result(result)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:  # a bug, not a bad reply: waiters get it too, nothing is cached
            logger.exception("decomposition of %s crashed", problem.problem_id)
            future.set_exception(exc)
            future.exception()  # mark retrieved so asyncio does not log it a second time
            raise
        finally:
            self._inflight.pop(key, None)
        decomposition, _ = result
        self._memory[key] = decomposition
        if self.cache is not None and decomposition.source != "fallback":
            self.cache.put(decomposition)
        return result

    def _from_disk(self, key: str) -> Decomposition | None:
        if self.cache is None:
            return None
        try:
            found = self.cache.get(key, self.curriculum)
        except DecompositionError as exc:
            self.stats["bad_cache_entries"] += 1
            logger.warning("ignoring invalid cached decomposition %s (%s): %s", key, exc.reason, exc)
            return None
        if found is not None:
            self.stats["disk_hits"] += 1
        return found

    async def _extract(self, problem: Problem) -> tuple[Decomposition, int]:
        if self.backend is None:
            self.stats["rules"] += 1
            return rule_decomposition(problem, self.curriculum), 0
        messages = extraction_messages(problem, self.curriculum)
        schema = extraction_schema(self.curriculum, len(reference_steps(problem)))
        sampling = dataclasses.replace(EXTRACTION_SAMPLING, response_schema=schema)
        calls = 0
        for _ in range(self.max_attempts):
            calls += 1
            self.stats["llm_calls"] += 1
            try:
                reply = await self.backend.chat(messages, sampling)
                decomposition = parse_extraction(reply.text, problem, self.curriculum, self.extractor)
            except DecompositionError as exc:
                self.stats[f"parse_failures/{exc.reason}"] += 1
                logger.info("extraction for %s rejected (%s): %s", problem.problem_id, exc.reason, exc)
                messages = [*messages, {"role": "assistant", "content": reply.text}, dict(repair_message(exc))]
                continue
            except LLMCallError as exc:
                self.stats["backend_failures"] += 1
                logger.warning(
                    "extraction endpoint failed for %s (%s); using the rule extractor", problem.problem_id, exc.reason
                )
                break
            self.stats["llm"] += 1
            return decomposition, calls
        self.stats["fallbacks"] += 1
        logger.warning(
            "no valid LLM extraction for %s after %d call(s); using the rule extractor", problem.problem_id, calls
        )
        return rule_decomposition(problem, self.curriculum, source="fallback"), calls
