"""verl's FSDP engine for the host CPU, with the number of threads it computes on.

Ray starts every worker with ``OMP_NUM_THREADS=1``, so verl's actor updates and computes log-probs on one core while
the others idle: on the host CPU the rollout and the trainer take turns (the rollout waits during the update, the
update during generation), so the engine may use the cores the rollout leaves. ``PEARL_TRAIN_THREADS`` says how
many (``pearl-verl train-local --train-threads``); unset, the engine keeps Ray's one thread.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

logger = logging.getLogger(__name__)

TRAIN_THREADS_ENV = "PEARL_TRAIN_THREADS"


def train_threads() -> int | None:
    """The thread count ``PEARL_TRAIN_THREADS`` asks for; None when unset or empty."""
    value = os.environ.get(TRAIN_THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{TRAIN_THREADS_ENV}={value!r}: a whole number of threads, 1 or more")
    return int(value)


class HostFSDPEngine(FSDPEngineWithLMHead):
    """:class:`FSDPEngineWithLMHead` that computes on ``PEARL_TRAIN_THREADS`` threads when it is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        threads = train_threads()
        if threads is not None:
            torch.set_num_threads(threads)
            logger.info("verl's FSDP engine computes on %d threads (%s)", threads, TRAIN_THREADS_ENV)
