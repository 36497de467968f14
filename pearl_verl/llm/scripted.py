"""``ScriptedChatBackend``: a test double for an LLM endpoint, answering from a Python function.

For unit tests of prompts and parsers without HTTP. The HTTP path itself is tested against
:class:`pearl_verl.llm.local_server.LocalChatServer`. Never used by a recipe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pearl_verl.llm.chat_types import ChatResult, LLMCallError, Message, SamplingConfig, UsageMeter

Script = Callable[[list[Message], SamplingConfig], "str | Sequence[str] | LLMCallError"]


class ScriptedChatBackend:
    """Answers ``chat`` calls with ``script(messages, sampling)``.

    The script returns the completion text (or one text per sample when ``sampling.n > 1``), or an
    :class:`LLMCallError` to simulate an endpoint that failed for good. ``calls`` records every call.
    """

    def __init__(self, script: Script, sampling: SamplingConfig | None = None):
        self.script = script
        self.sampling = sampling or SamplingConfig()
        self.calls: list[tuple[list[Message], SamplingConfig]] = []
        self.usage = UsageMeter()

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        sampling = sampling or self.sampling
        start = time.perf_counter()
        messages = [dict(m) for m in messages]
        self.calls.append((messages, sampling))
        answer = self.script(messages, sampling)
        if isinstance(answer, LLMCallError):
            self.usage.record(None, answer.attempts, time.perf_counter() - start, answer.reason)
            raise answer
        texts = (answer,) * sampling.n if isinstance(answer, str) else tuple(answer)
        result = ChatResult(
            texts=texts,
            finish_reasons=("stop",) * len(texts),
            prompt_tokens=sum(len(str(m.get("content", "")).split()) for m in messages),
            completion_tokens=sum(len(t.split()) for t in texts),
            latency_s=time.perf_counter() - start,
        )
        self.usage.record(result, 1, result.latency_s)
        return result
