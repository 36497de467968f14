"""Types shared by every LLM call in pearl_verl (student, judge, knowledge extraction, teachers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from pearl_verl.errors import InputError
from pearl_verl.ranges import COUNT, FRACTION, NON_NEGATIVE_NUMBER, POSITIVE, POSITIVE_NUMBER, Range, check_ranges
from pearl_verl.redact import api_key_message, looks_secret

Message = Mapping[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""


STRUCTURED_OUTPUTS: tuple[str, ...] = ("auto", "none", "json_schema", "json_object")
AUTO_ORDER: tuple[str, ...] = ("json_schema", "json_object", "none")
"""What ``auto`` tries, in order, until the server takes one: the strictest first."""
JSON_MODES: tuple[str, ...] = ("json_schema", "json_object")
"""The modes in which the server itself holds the model to JSON (a reply that still breaks the format
leaves only a stronger model to try)."""
STRUCTURED_OUTPUT_HELP = (
    "how the server is held to the reply's JSON Schema: auto (the first of json_schema, json_object and none "
    "that the server takes), none, json_schema (vLLM) or json_object (llama-cpp-python)"
)


def check_api_key_env(name: str | None, where: str = "api_key_env") -> None:
    """Reject an ``api_key_env`` that looks like a key rather than the NAME of the variable holding one.

    The message names ``where`` (the field, or the flag that set it) and never the value: a pasted
    key repeated in an error line ends up in CI logs and issue trackers.

    Raises:
        InputError: for an empty value, a secret-shaped one (:func:`pearl_verl.redact.looks_secret`)
            or ``NAME=value``, and, not calling it a key, a name with a space in it.
    """
    if name is None:
        return
    if not name:
        raise InputError(f"{where} is empty; it must be the NAME of an environment variable (e.g. JUDGE_KEY).")
    words = name.split()
    if looks_secret(name) or "=" in name or any(map(looks_secret, words)) or words[:1] == ["Bearer"]:
        # NAME=value or "Bearer ...": what follows may be a key too short for looks_secret
        raise InputError(
            f"{api_key_message(where)} (it must be the NAME of an environment variable, e.g. JUDGE_KEY, "
            "never the key itself)."
        )
    if any(char.isspace() for char in name):
        raise InputError(f"{where} has a space in it, so it is no environment variable's name (it must be the NAME "
                         "of an environment variable, e.g. JUDGE_KEY).")


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings of one role (the student and the judge use different ones).

    Attributes:
        temperature: sampling temperature (paper: 1.0 for tutor and student, 0.3 for the judge).
        top_p: nucleus sampling (paper: 1.0).
        top_k: top-k sampling, sent as vLLM's ``top_k`` extra field; None leaves the server default
            (paper: 50 for tutor and student, 20 for the judge).
        max_tokens: completion token cap; None leaves the server default.
        n: completions per request (self-consistency).
        seed: per-request sampling seed; None for none.
        stop: stop strings.
        response_schema: the JSON Schema (as JSON text) of the reply the caller parses; sent as
            structured output where the endpoint has it (:attr:`EndpointConfig.structured_output`),
            ignored otherwise. The caller's strict parser checks the reply either way.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    max_tokens: int | None = None
    n: int = 1
    seed: int | None = None
    stop: tuple[str, ...] = ()
    response_schema: str | None = None

    RANGES: ClassVar[Mapping[str, Range]] = {
        "temperature": NON_NEGATIVE_NUMBER,
        "top_p": FRACTION,
        "top_k": Range(int, null_ok=True, why="null: the server's default"),
        "max_tokens": Range(int, null_ok=True, why="null: the server's default"),
        "n": POSITIVE,
        "seed": Range(int, low=0, high=2**63 - 1, null_ok=True),
    }
    """The allowed values of the number settings, checked here and shown in the flags' help."""

    def __post_init__(self) -> None:
        check_ranges(self)
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible chat endpoint (``vllm serve``, a hosted API, or a local test server).

    Attributes:
        base_url: e.g. ``http://judge-host:8000/v1``.
        model: the served model name.
        api_key_env: name of the environment variable holding the API key; None sends the
            placeholder key that ``vllm serve`` accepts. The key itself never appears in configs.
        timeout_s: per-attempt timeout in seconds.
        max_retries: retries after the first attempt, for timeouts, connection errors, HTTP 429
            and 5xx (other HTTP errors are configuration errors and fail at once).
        backoff_s: first retry delay; doubles per retry (with jitter) up to ``backoff_max_s``.
        backoff_max_s: cap of a single retry delay (also caps a server's Retry-After).
        max_concurrency: requests in flight at once from one client.
        structured_output: how the server is asked to keep a reply to the caller's JSON Schema
            (``SamplingConfig.response_schema``): ``auto`` (each of :data:`AUTO_ORDER` in turn
            until the server takes one: the client keeps the first it takes, logs which, and
            reports it as ``usage.structured_output``), ``none`` (the prompt and the strict parser
            alone), ``json_schema`` (OpenAI's ``response_format={"type": "json_schema", ...}``, as
            vLLM serves it) or ``json_object`` (``{"type": "json_object", "schema": ...}``, as
            llama-cpp-python's server takes it).
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "timeout_s": POSITIVE_NUMBER,
        "max_retries": COUNT,
        "backoff_s": NON_NEGATIVE_NUMBER,
        "backoff_max_s": NON_NEGATIVE_NUMBER,
        "max_concurrency": POSITIVE,
    }
    """The allowed values of the number settings, checked here and by the endpoint flags."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 0.5
    backoff_max_s: float = 8.0
    max_concurrency: int = 64
    structured_output: str = "auto"

    def __post_init__(self) -> None:
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise InputError(
                f"structured_output={self.structured_output!r} must be one of {list(STRUCTURED_OUTPUTS)}."
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise InputError(f"base_url={self.base_url!r} must start with http:// or https:// (e.g. http://host:8000/v1).")
        check_api_key_env(self.api_key_env)
        if not self.model:
            raise InputError("model must name the served model (the name given to vllm serve --served-model-name).")
        check_ranges(self)
        if self.backoff_max_s < self.backoff_s:
            raise InputError(f"need backoff_s ({self.backoff_s}) <= backoff_max_s ({self.backoff_max_s}).")


@dataclass(frozen=True)
class ChatResult:
    """What one chat call returned.

    Attributes:
        texts: one completion per requested sample (``SamplingConfig.n``); may be empty strings.
        finish_reasons: per completion, e.g. ``"stop"`` or ``"length"`` (truncated).
        prompt_tokens: prompt tokens as reported by the server (0 if not reported).
        completion_tokens: completion tokens as reported by the server (0 if not reported).
        latency_s: wall time of the call including retries.
        attempts: HTTP attempts made (1 = no retry).
        failed_attempts: the reason of each attempt that failed before the one that answered, in
            order (``("timeout", "http_500")``): what a retry absorbed.
    """

    texts: tuple[str, ...]
    finish_reasons: tuple[str | None, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    failed_attempts: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The first completion."""
        return self.texts[0]


class LLMCallError(RuntimeError):
    """A chat call that failed for good (after its retries, or at once for a configuration error).

    Attributes:
        reason: a short machine-readable cause: ``timeout``, ``connection``, ``http_429``,
            ``http_500``, ``http_400``, ``bad_response``...
        attempts: HTTP attempts made.
        failed_attempts: the reason of each attempt, in order (the last one is ``reason``); empty
            where the caller did not track attempts.
    """

    def __init__(self, message: str, reason: str, attempts: int, failed_attempts: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.attempts = attempts
        self.failed_attempts = failed_attempts


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that answers chat messages: the HTTP client, or a test double."""

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        """One chat completion call; raises :class:`LLMCallError` when it fails for good."""
        ...


@dataclass
class UsageMeter:
    """Counters of one client's calls, for metrics (``pearl/<component>/...``) and reports."""

    calls: int = 0
    attempts: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    backoff_s: float = 0.0
    """Seconds spent waiting between attempts (backoff or the server's Retry-After), part of ``latency_s``."""
    failure_reasons: dict[str, int] = field(default_factory=dict)
    structured_output: str | None = None
    """The structured-output mode in use: the one configured, or the one ``auto`` found (None until then)."""
    refused_modes: dict[str, str] = field(default_factory=dict)
    """The modes ``auto`` tried that the server refused, with the refusal (``http_400: ...``)."""

    def record(self, result: ChatResult | None, attempts: int, latency_s: float, reason: str | None = None) -> None:
        """Count one finished call (``result`` None when it failed with ``reason``)."""
        self.calls += 1
        self.attempts += attempts
        self.latency_s += latency_s
        if result is None:
            self.failures += 1
            key = reason or "unknown"
            self.failure_reasons[key] = self.failure_reasons.get(key, 0) + 1
        else:
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens

    @staticmethod
    def of(holder: Any) -> UsageMeter | None:
        """The meter of whatever holds a client (``.backend.usage``) or a meter (``.usage``), if any."""
        meter = getattr(getattr(holder, "backend", None), "usage", None) or getattr(holder, "usage", None)
        return meter if isinstance(meter, UsageMeter) else None

    @staticmethod
    def note_of(holder: Any) -> str | None:
        """:meth:`structured_output_note` of whatever holds a client or a meter (:meth:`of`)."""
        meter = UsageMeter.of(holder)
        return meter.structured_output_note() if meter is not None else None

    @staticmethod
    def mode_of(holder: Any) -> str | None:
        """The structured-output mode in use by whatever holds a client or a meter; None before any call."""
        meter = UsageMeter.of(holder)
        return meter.structured_output if meter is not None else None

    def structured_output_note(self) -> str | None:
        """``structured output: MODE (refused: ...)`` for a command's summary; None before any call with a schema."""
        if self.structured_output is None:
            return None
        refused = "; ".join(f"{mode}: {why}" for mode, why in self.refused_modes.items())
        return f"structured output: {self.structured_output}" + (f" (the server refused {refused})" if refused else "")

    def snapshot(self) -> dict[str, Any]:
        """The counters as a plain dict (retries = attempts beyond the first of each call)."""
        return {
            "calls": self.calls,
            "attempts": self.attempts,
            "retries": self.attempts - self.calls,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "backoff_s": self.backoff_s,
            "failure_reasons": dict(self.failure_reasons),
            "structured_output": self.structured_output,
            "refused_modes": dict(self.refused_modes),
        }
