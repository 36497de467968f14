"""Quiet output for local runs: a person sees the progress bar and the summary, not library chatter.

verl, transformers and torch print engine, platform and memory notes, warnings and progress bars of
their own while a run sets up and trains (through ``print``, ``warnings``, ``logging`` and C++
loggers alike). Unless ``-v`` is given, everything written to the process's stdout and stderr goes
to ``out_dir/train.log`` instead, at file-descriptor level so C-level output is caught too; the
progress bar and the summary are written to duplicates of the original streams.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pearl_verl.redact import RedactingStream

_PER_EPISODE_LOGGER = "verl.utils.tokenizer.continuous_token_wiring"
"""verl's continuous-token wiring warns once per agent-loop instance, i.e. once per episode, when a
model type (llama, SmolLM2's) has no builder of its own."""


class _OncePerMessage(logging.Filter):
    """Lets each distinct message template through once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.levelno}:{record.msg}"
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@dataclass
class Console:
    """Where a person's output goes: the terminal's stdout and stderr (as they were before)."""

    out: TextIO
    err: TextIO


@contextlib.contextmanager
def quiet_run(log_path: Path, verbose: bool) -> Iterator[Console]:
    """Send all other output to ``log_path`` for the duration (nothing changes when ``verbose``)."""
    if verbose:
        yield Console(sys.stdout, sys.stderr)
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    console = Console(*(RedactingStream(os.fdopen(os.dup(saved[fd]), "w", buffering=1)) for fd in (1, 2)))
    with open(log_path, "a", encoding="utf-8") as log, warnings.catch_warnings():
        warnings.simplefilter("default")  # each distinct warning once, into the log
        for fd in (1, 2):
            os.dup2(log.fileno(), fd)
        handlers = _log_handlers_to(log)
        once = _OncePerMessage()
        builder_log = logging.getLogger(_PER_EPISODE_LOGGER)
        builder_log.addFilter(once)
        try:
            yield console
        finally:
            builder_log.removeFilter(once)
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            for handler, stream in handlers:
                handler.setStream(stream)
            # closed on every exit, errors included: an open duplicate is reported at interpreter
            # shutdown ("sys:1: ResourceWarning: unclosed file") after the run's own last line
            console.out.close()
            console.err.close()


def _log_handlers_to(log: TextIO) -> list[tuple[logging.StreamHandler, TextIO]]:
    """Point stream handlers that hold Python-level ``sys.stderr``/``sys.stdout`` objects at the log.

    Redirecting file descriptors 1 and 2 already catches them; this only keeps handlers that were
    created with a reference to a wrapped stream (pytest's capture, for example) from bypassing it.
    """
    moved = []
    for logger in [logging.getLogger(), *[logging.getLogger(n) for n in logging.root.manager.loggerDict]]:
        for handler in getattr(logger, "handlers", []):
            if type(handler) is logging.StreamHandler and handler.stream in (sys.stdout, sys.stderr):
                moved.append((handler, handler.setStream(log)))
    return moved
