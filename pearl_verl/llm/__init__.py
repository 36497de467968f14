"""One async OpenAI-compatible client for every LLM call, plus the types and test doubles around it."""

from pearl_verl.llm.client import OpenAIChatClient
from pearl_verl.llm.settings import EndpointSettings
from pearl_verl.llm.types import (
    ChatBackend,
    ChatResult,
    EndpointConfig,
    LLMCallError,
    Message,
    SamplingConfig,
    UsageMeter,
)

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
