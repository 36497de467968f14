"""A :class:`ChatBackend` wrapper that records every logical call, for checking drills against servers.

The fault server sees HTTP requests; the client retries them. :class:`RecordingBackend` sits between
a caller (student simulator, judge) and the shared client and keeps one :class:`CallRecord` per
``chat`` call: its request fingerprint (the same hash the fault server computes), the attempts the
client reports, and how it ended. A drill can then count server requests per logical call.

Calls are attributed to a unit of work (an episode) through :data:`CALL_TAG`, a context variable
each asyncio task sets for itself (:func:`tagged`), so one shared backend serves every episode as
in a real rollout.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pearl_verl.faults.plan import fingerprint
from pearl_verl.llm.chat_types import ChatBackend, ChatResult, LLMCallError, Message, SamplingConfig

CALL_TAG: ContextVar[str | None] = ContextVar("pearl_fault_call_tag", default=None)
"""The label of the work the current task does (e.g. an episode id); recorded with each call."""


@contextlib.contextmanager
def tagged(tag: str) -> Iterator[None]:
    """Attribute the calls made inside this block (in this task) to ``tag``."""
    token = CALL_TAG.set(tag)
    try:
        yield
    finally:
        CALL_TAG.reset(token)


@dataclass(frozen=True)
class CallRecord:
    """One logical chat call.

    Attributes:
        tag: :data:`CALL_TAG` when the call was made.
        fingerprint: the request's fingerprint (:func:`pearl_verl.faults.plan.request_fingerprint`).
        attempts: HTTP attempts the client made (``ChatResult.attempts`` / ``LLMCallError.attempts``).
        ok: whether the call returned a result.
        reason: the ``LLMCallError`` reason when it failed.
        text: the first completion when it succeeded.
        failed_attempts: the client's reason for each attempt that failed, in order.
    """

    tag: str | None
    fingerprint: str
    attempts: int
    ok: bool
    reason: str | None = None
    text: str | None = None
    failed_attempts: tuple[str, ...] = ()


class RecordingBackend:
    """Forwards ``chat`` to ``inner`` and records each call.

    Args:
        inner: the wrapped backend (an :class:`pearl_verl.llm.OpenAIChatClient` in drills).
        model: the model name ``inner`` sends (part of the fingerprint).
    """

    def __init__(self, inner: ChatBackend, model: str):
        self.inner = inner
        self.model = model
        self.calls: list[CallRecord] = []
        self._lock = threading.Lock()

    @property
    def usage(self) -> Any:
        """The wrapped backend's usage meter (None if it keeps none)."""
        return getattr(self.inner, "usage", None)

    @property
    def sampling(self) -> SamplingConfig:
        return getattr(self.inner, "sampling", None) or SamplingConfig()

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        effective = sampling or self.sampling
        key = fingerprint(self.model, messages, effective.seed, effective.n)
        tag = CALL_TAG.get()
        try:
            result = await self.inner.chat(messages, sampling)
        except LLMCallError as exc:
            self._add(CallRecord(tag, key, exc.attempts, False, exc.reason, failed_attempts=exc.failed_attempts))
            raise
        self._add(CallRecord(tag, key, result.attempts, True, text=result.texts[0] if result.texts else "",
                             failed_attempts=result.failed_attempts))
        return result

    def _add(self, record: CallRecord) -> None:
        with self._lock:
            self.calls.append(record)
