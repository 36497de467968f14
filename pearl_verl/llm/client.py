"""The one async OpenAI-compatible chat client every pearl_verl LLM call goes through.

Built on the official ``openai`` package (``AsyncOpenAI``) with its own retries switched off, so
that retries are bounded, counted and visible: timeouts, connection errors, HTTP 429 and 5xx are
retried with jittered exponential backoff (honouring Retry-After up to a cap); other HTTP errors
(400, 401, 404...) are configuration errors and fail at once. A semaphore bounds the requests in
flight. Each event loop gets its own HTTP connection pool and semaphore, since verl's agent-loop
workers and tests run several loops in one process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
import weakref
from collections.abc import Sequence
from typing import Any

import openai

from pearl_verl.llm.types import ChatResult, EndpointConfig, LLMCallError, Message, SamplingConfig, UsageMeter

logger = logging.getLogger(__name__)

PLACEHOLDER_API_KEY = "EMPTY"  # what vllm serve accepts when started without --api-key


class _BadResponse(ValueError):
    """A 200 response that is not a usable completion (no choices)."""


# Failures worth another attempt: the network, an overloaded or crashing server, a body cut short.
_TRANSIENT = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APIResponseValidationError,
    json.JSONDecodeError,
    _BadResponse,
)


class OpenAIChatClient:
    """Async chat client with bounded retries, a concurrency limit and usage counters.

    Args:
        endpoint: where to send requests and how patiently.
        sampling: default sampling settings; a call may pass its own.
        seed: seeds the retry jitter, for reproducible tests.
    """

    def __init__(self, endpoint: EndpointConfig, sampling: SamplingConfig | None = None, seed: int | None = None):
        self.endpoint = endpoint
        self.sampling = sampling or SamplingConfig()
        self.usage = UsageMeter()
        self._api_key = _api_key(endpoint.api_key_env)
        self._rng = random.Random(seed)
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, asyncio.Semaphore]]
        self._per_loop = weakref.WeakKeyDictionary()

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        """One chat completion, retried on transient failures.

        Raises:
            LLMCallError: after ``max_retries`` retries of transient failures, or at once for a
                non-retryable HTTP error or a response without choices.
        """
        sampling = sampling or self.sampling
        client, semaphore = self._for_current_loop()
        request = self._request(messages, sampling)
        start = time.perf_counter()
        attempts = 0
        async with semaphore:
            while True:
                attempts += 1
                try:
                    response = await client.chat.completions.create(**request)
                    result = _to_result(response, attempts, time.perf_counter() - start)
                except _TRANSIENT as exc:
                    reason = _reason(exc)
                    if attempts > self.endpoint.max_retries:
                        raise self._fail(f"{reason} after {attempts} attempts: {exc}", reason, attempts, start) from exc
                    delay = self._backoff(attempts, exc)
                    logger.debug("retrying %s in %.2fs (attempt %d): %s", self.endpoint.base_url, delay, attempts, reason)
                    await asyncio.sleep(delay)
                    continue
                except openai.APIStatusError as exc:
                    reason = _reason(exc)
                    raise self._fail(f"{reason} from {self.endpoint.base_url}: {exc}", reason, attempts, start) from exc
                self.usage.record(result, attempts, result.latency_s)
                return result

    def _request(self, messages: Sequence[Message], sampling: SamplingConfig) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": [dict(m) for m in messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "n": sampling.n,
        }
        if sampling.max_tokens is not None:
            request["max_tokens"] = sampling.max_tokens
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        if sampling.stop:
            request["stop"] = list(sampling.stop)
        if sampling.top_k is not None:
            request["extra_body"] = {"top_k": sampling.top_k}  # vLLM's extension of the OpenAI API
        return request

    def _for_current_loop(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        pair = self._per_loop.get(loop)
        if pair is None:
            client = openai.AsyncOpenAI(
                base_url=self.endpoint.base_url,
                api_key=self._api_key,
                timeout=self.endpoint.timeout_s,
                max_retries=0,
            )
            pair = (client, asyncio.Semaphore(self.endpoint.max_concurrency))
            self._per_loop[loop] = pair
        return pair

    def _backoff(self, attempt: int, exc: Exception) -> float:
        cap = self.endpoint.backoff_max_s
        retry_after = _retry_after(exc)
        if retry_after is not None:
            return min(retry_after, cap)
        base = min(cap, self.endpoint.backoff_s * 2 ** (attempt - 1))
        return base * (0.5 + 0.5 * self._rng.random())

    def _fail(self, message: str, reason: str, attempts: int, start: float) -> LLMCallError:
        self.usage.record(None, attempts, time.perf_counter() - start, reason)
        logger.warning("LLM call to %s failed: %s", self.endpoint.base_url, message)
        return LLMCallError(message, reason, attempts)


def _api_key(env_name: str | None) -> str:
    if env_name is None:
        return PLACEHOLDER_API_KEY
    key = os.environ.get(env_name)
    if not key:
        raise ValueError(
            f"api_key_env={env_name!r} names an environment variable that is not set; export it, or set "
            "api_key_env to null for a vllm serve endpoint started without --api-key."
        )
    return key


def _to_result(response: Any, attempts: int, latency_s: float) -> ChatResult:
    choices = getattr(response, "choices", None)
    if not choices:
        raise _BadResponse("response has no choices")
    usage = getattr(response, "usage", None)
    return ChatResult(
        texts=tuple((choice.message.content or "") if choice.message else "" for choice in choices),
        finish_reasons=tuple(choice.finish_reason for choice in choices),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        latency_s=latency_s,
        attempts=attempts,
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError | _BadResponse):
        return "bad_response"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    status = getattr(exc, "status_code", None)
    return f"http_{status}" if status is not None else type(exc).__name__


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
