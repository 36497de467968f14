"""Fill the knowledge-decomposition cache for prepared problems ahead of training.

The same :class:`~pearl_verl.knowledge.decompose_once.Decomposer` and
:class:`~pearl_verl.knowledge.cache.DecompositionCache` as ``pearl-verl decompose`` and the
training-time simulator, so training workers that point ``pearl.student.cache_dir`` at the same
directory (with the same extraction model name in ``pearl.student.model`` and the LLM decomposer)
find every problem already decomposed. Without an endpoint the rule extractor fills the cache
(what ``backend=offline`` students read). Problems already in the cache cost nothing; extraction
failures fall back to the rules for this run only and are counted, never cached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pearl_verl.async_run import run_async
from pearl_verl.dialogue.problem import Problem
from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import UsageMeter

if TYPE_CHECKING:
    from pearl_verl.llm.chat_types import EndpointConfig


def fill_cache(
    problems: Sequence[Problem],
    cache_dir: str | Path,
    endpoint: EndpointConfig | None = None,
    concurrency: int = 16,
    curriculum_path: str | None = None,
    on_done: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Decompose every problem into ``cache_dir`` (concurrently) and return the decomposer's counters.

    Args:
        problems: distinct problems.
        cache_dir: the cache directory (created).
        endpoint: the extraction model (``--extract-*`` flags); its served model name is part of the
            cache key, so it must equal ``pearl.student.model`` for training workers to hit the
            cache. None uses the rule extractor.
        concurrency: extractions in flight.
        curriculum_path: a custom curriculum; None uses the shipped one.
        on_done: called after each problem (progress bars).

    Returns:
        ``{"problems", "extractor", "cache_dir", "disk_hits", "rules", "llm", "fallbacks", "llm_calls",
        "structured_output", ...}``.
    """
    from pearl_verl.knowledge.cache import DecompositionCache
    from pearl_verl.knowledge.curriculum import load_curriculum
    from pearl_verl.knowledge.decompose_once import Decomposer

    if concurrency < 1:
        raise InputError(f"extraction concurrency={concurrency} must be >= 1.")
    backend = None
    if endpoint is not None:
        from pearl_verl.llm import OpenAIChatClient

        backend = OpenAIChatClient(endpoint)
    decomposer = Decomposer(
        load_curriculum(curriculum_path), backend, endpoint.model if endpoint else None, DecompositionCache(cache_dir)
    )

    async def run() -> None:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(problem: Problem) -> None:
            async with semaphore:
                await decomposer.decompose(problem)
                if on_done is not None:
                    on_done()

        await asyncio.gather(*(one(p) for p in problems))

    run_async(run())
    stats: dict[str, Any] = {key: 0 for key in ("disk_hits", "rules", "llm", "fallbacks", "llm_calls")}
    stats.update(decomposer.stats)
    stats.update({"problems": len(problems), "extractor": decomposer.extractor, "cache_dir": str(cache_dir)})
    stats["structured_output"] = UsageMeter.note_of(backend)  # the mode auto found; None without a model call
    return stats
