"""Which fault each request gets: seeded per-kind rates, decided per request content, recorded.

A fault is drawn for every request the fault server receives, from a uniform number that is a hash
of ``(seed, request fingerprint, occurrence)``: the fingerprint identifies the request's content
(model, messages, sampling seed, ``n``), and the occurrence counts how often that content has
been seen. A client retry re-sends the same body, so the k-th attempt of a logical call always
gets the same fault whatever else is in flight: a drill is reproducible under any concurrency.
(Two different logical calls with byte-identical bodies in flight at once share one sequence of
draws; which of them gets which draw then depends on arrival order.)

Every draw is kept as an :class:`Injection`, so a drill can check each outcome against what was
injected.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pearl_verl.errors import InputError


class FaultKind(str, Enum):
    """What the fault server does instead of (or on top of) answering normally."""

    TIMEOUT = "timeout"  # holds the request past the client's timeout
    HTTP_429 = "http_429"  # rate limited, with Retry-After
    HTTP_500 = "http_500"  # internal server error
    RESET = "reset"  # TCP reset before any answer
    MALFORMED_JSON = "malformed_json"  # HTTP 200 with a body that is not JSON (a proxy's HTML page)
    TRUNCATED_JSON = "truncated_json"  # HTTP 200, honest Content-Length, JSON cut in half
    CUT_BODY = "cut_body"  # HTTP 200 announcing the full length, connection closed halfway
    EMPTY_CONTENT = "empty_content"  # a well-formed completion whose message content is ""
    SLOW_STREAM = "slow_stream"  # the valid completion, trickled out in chunks (within the timeout)


FAULT_KINDS: tuple[str, ...] = tuple(kind.value for kind in FaultKind)

TRANSPORT_FAULTS: frozenset[FaultKind] = frozenset(
    {
        FaultKind.TIMEOUT,
        FaultKind.HTTP_429,
        FaultKind.HTTP_500,
        FaultKind.RESET,
        FaultKind.MALFORMED_JSON,
        FaultKind.TRUNCATED_JSON,
        FaultKind.CUT_BODY,
    }
)
"""Faults the shared client sees as a failed attempt and retries; the other kinds reach the caller
(empty content must be rejected by the caller's strict parser; a slow stream is a success)."""


@dataclass(frozen=True)
class FaultConfig:
    """Fault rates and the shape of each fault.

    Attributes:
        rates: probability per request of each kind (keys from :data:`FAULT_KINDS`, values in
            [0, 1], summing to at most 1); the remainder is answered normally.
        seed: seeds every draw; the same seed and requests give the same faults.
        hold_s: how long a ``timeout`` fault holds the request before answering (too late); set
            it above the client's ``timeout_s``.
        retry_after_s: the ``Retry-After`` header of an ``http_429`` answer.
        stream_chunks: pieces a ``slow_stream`` answer is sent in.
        stream_delay_s: pause before each piece; keep ``stream_chunks * stream_delay_s`` below the
            client's timeout, or a slow stream becomes a timeout.
    """

    rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    hold_s: float = 2.5
    retry_after_s: float = 0.05
    stream_chunks: int = 8
    stream_delay_s: float = 0.03

    def __post_init__(self) -> None:
        unknown = sorted(set(self.rates) - set(FAULT_KINDS))
        if unknown:
            raise InputError(f"FaultConfig.rates has unknown fault kind(s) {unknown}; valid: {list(FAULT_KINDS)}.")
        bad = {kind: rate for kind, rate in self.rates.items() if not 0.0 <= float(rate) <= 1.0}
        if bad:
            raise InputError(f"FaultConfig.rates {bad} must each lie in [0, 1] (a probability per request).")
        total = sum(float(rate) for rate in self.rates.values())
        if total > 1.0 + 1e-9:
            raise InputError(
                f"FaultConfig.rates sum to {total:.4g} > 1; they are probabilities of disjoint outcomes per "
                "request, so lower them (FaultConfig.uniform(0.2) spreads 20% evenly over every kind)."
            )
        object.__setattr__(self, "rates", {kind: float(self.rates.get(kind, 0.0)) for kind in FAULT_KINDS})
        for name in ("hold_s", "retry_after_s", "stream_delay_s"):
            if not getattr(self, name) >= 0:
                raise InputError(f"FaultConfig.{name}={getattr(self, name)!r} must be >= 0 seconds.")
        if self.stream_chunks < 2:
            raise InputError(f"FaultConfig.stream_chunks={self.stream_chunks} must be >= 2 to make a stream slow.")

    @classmethod
    def uniform(cls, total: float, kinds: tuple[str, ...] = FAULT_KINDS, **settings: Any) -> FaultConfig:
        """``total`` fault probability per request, split evenly over ``kinds``.

        Raises:
            InputError: for ``total`` outside [0, 1] or no kinds.
        """
        if not 0.0 <= total <= 1.0:
            raise InputError(f"total fault rate {total!r} must lie in [0, 1] (e.g. 0.2 for 20% of requests).")
        if not kinds:
            raise InputError("uniform() needs at least one fault kind.")
        return cls(rates={kind: total / len(kinds) for kind in kinds}, **settings)

    @property
    def total_rate(self) -> float:
        """Probability that a request gets any fault."""
        return sum(self.rates.values())


@dataclass(frozen=True)
class Injection:
    """One request as the fault plan saw it.

    Attributes:
        index: arrival order at the server (0-based).
        fingerprint: the request content's hash (see :func:`request_fingerprint`).
        occurrence: how many earlier requests had the same fingerprint.
        kind: the fault injected, or None for a normal answer.
    """

    index: int
    fingerprint: str
    occurrence: int
    kind: FaultKind | None


def request_fingerprint(body: Mapping[str, Any]) -> str:
    """A short hash of what makes a chat request a distinct logical call.

    Covers ``model``, ``messages``, the sampling ``seed`` and ``n``; not temperature or max_tokens,
    which never tell two calls of one role apart.
    """
    return fingerprint(body.get("model"), body.get("messages") or [], body.get("seed"), body.get("n", 1) or 1)


def fingerprint(model: Any, messages: Any, seed: Any, n: Any) -> str:
    """:func:`request_fingerprint` from its parts (what a client knows before sending)."""
    key = json.dumps(
        {"model": model, "messages": [dict(m) for m in messages], "seed": seed, "n": int(n)},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


class FaultPlan:
    """Draws and records one fault decision per request (thread-safe).

    Args:
        config: rates and seed.
    """

    def __init__(self, config: FaultConfig):
        self.config = config
        self.injections: list[Injection] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._edges: list[tuple[float, FaultKind]] = []
        edge = 0.0
        for kind in FaultKind:
            edge += config.rates[kind.value]
            self._edges.append((edge, kind))

    def draw(self, body: Mapping[str, Any]) -> Injection:
        """The fault for this request (recorded)."""
        key = request_fingerprint(body)
        with self._lock:
            occurrence = self._seen[key]
            self._seen[key] += 1
            injection = Injection(len(self.injections), key, occurrence, self.kind_for(key, occurrence))
            self.injections.append(injection)
        return injection

    def kind_for(self, key: str, occurrence: int) -> FaultKind | None:
        """The fault of the ``occurrence``-th request with fingerprint ``key`` (pure function)."""
        digest = hashlib.sha256(f"{self.config.seed}|{key}|{occurrence}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        for edge, kind in self._edges:
            if u < edge:
                return kind
        return None

    def counts(self) -> dict[str, int]:
        """Requests per outcome: each fault kind's value, and ``"none"`` for normal answers."""
        with self._lock:
            counter = Counter(i.kind.value if i.kind is not None else "none" for i in self.injections)
        return {key: counter.get(key, 0) for key in (*FAULT_KINDS, "none")}

    def by_fingerprint(self) -> dict[str, list[Injection]]:
        """Injections grouped by request fingerprint, in arrival order."""
        groups: dict[str, list[Injection]] = {}
        with self._lock:
            for injection in self.injections:
                groups.setdefault(injection.fingerprint, []).append(injection)
        return groups
