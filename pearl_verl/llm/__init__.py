"""One async OpenAI-compatible client for every LLM call, plus the types and test doubles around it."""

from pearl_verl.llm.chat_types import (
    ChatBackend,
    ChatResult,
    EndpointConfig,
    LLMCallError,
    Message,
    SamplingConfig,
    UsageMeter,
)
from pearl_verl.llm.client import OpenAIChatClient
from pearl_verl.llm.settings import EndpointSettings

__all__ = [
    "ChatBackend",
    "ChatResult",
    "EndpointConfig",
    "EndpointSettings",
    "LLMCallError",
    "Message",
    "OpenAIChatClient",
    "SamplingConfig",
    "UsageMeter",
]
