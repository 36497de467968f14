"""verl's FSDP engine for the host CPU, with the number of threads it computes on.

Ray starts every worker with ``OMP_NUM_THREADS=1``, so verl's actor updates and computes log-probs on one core while
the others idle: on the host CPU the rollout and the trainer take turns (the rollout waits during the update, the
update during generation), so the engine may use the cores the rollout leaves. ``PEARL_TRAIN_THREADS`` says how
many (``pearl-verl train-local --train-threads``); unset, the engine keeps Ray's one thread.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

from pearl_verl.verl_plugin.compat import register_engine_once
from pearl_verl.verl_plugin.cpu.threads import TRAIN_THREADS_ENV, train_threads

logger = logging.getLogger(__name__)


class HostFSDPEngine(FSDPEngineWithLMHead):
    """:class:`FSDPEngineWithLMHead` that computes on ``PEARL_TRAIN_THREADS`` threads when it is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        threads = train_threads()
        if threads is not None:
            torch.set_num_threads(threads)
            logger.info("verl's FSDP engine computes on %d threads (%s)", threads, TRAIN_THREADS_ENV)


def register_host_engine(device: str) -> None:
    """Make :class:`HostFSDPEngine` verl's FSDP and FSDP2 language-model engine for ``device`` (once per process)."""
    for backend in ("fsdp", "fsdp2"):
        register_engine_once(HostFSDPEngine, "language_model", backend, device)
