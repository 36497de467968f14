"""``EndpointSettings``: the endpoint and sampling keys every LLM role's config section shares.

The judge (``reward.reward_kwargs.*``) and the student (``pearl.student.*``) declare their endpoint
through this one class, so a key means the same, has the same check and the same message in both;
each role adds its own fields and restates only the defaults that differ (the judge's 300 s
timeout, its temperature 0.3). The keys stay flat (``pearl.student.base_url``), as verl passes
``reward_kwargs`` to the reward manager as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pearl_verl.errors import InputError, check_choices
from pearl_verl.llm.chat_types import STRUCTURED_OUTPUTS, EndpointConfig, SamplingConfig, check_api_key_env
from pearl_verl.ranges import Range, check_ranges

SAMPLING_FIELDS: tuple[str, ...] = ("temperature", "top_p", "top_k", "max_tokens")
"""The sampling keys of :class:`EndpointSettings` (the rest name and reach the endpoint)."""


@dataclass(frozen=True)
class EndpointSettings:
    """An LLM role's endpoint and sampling, as flat keys of its config section.

    Attributes:
        base_url: the role's OpenAI-compatible endpoint, e.g. ``http://host:8000/v1``.
        model: the served model name (``vllm serve --served-model-name``).
        api_key_env: NAME of the environment variable holding the API key (never the key itself);
            None for a ``vllm serve`` started without ``--api-key``.
        timeout_s: per-HTTP-attempt timeout in seconds.
        max_retries: HTTP retries after the first attempt (timeouts, connection errors, 429, 5xx).
        max_concurrency: requests in flight at once from one client.
        structured_output: ``auto`` (the first of json_schema, json_object, none that the server
            takes), ``none``, ``json_schema`` (vLLM) or ``json_object`` (llama-cpp-python): whether
            the server is held to the reply's JSON Schema (``EndpointConfig.structured_output``);
            the strict parsers check every reply anyway.
        temperature: sampling temperature.
        top_p: nucleus sampling.
        top_k: top-k, sent as vLLM's ``top_k``; None leaves the server default.
        max_tokens: completion token cap; None leaves the server default.
    """

    SECTION: ClassVar[str] = "pearl"
    """Where the role's keys live, for messages (``reward.reward_kwargs``, ``pearl.student``)."""
    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = {"structured_output": STRUCTURED_OUTPUTS}
    """The allowed values of the string keys (None is allowed where a key's default is None); the
    command-line flags offer the same (:func:`pearl_verl.config_flags.add_config_flags`)."""
    RANGES: ClassVar[Mapping[str, Range]] = {
        **{name: EndpointConfig.RANGES[name] for name in ("timeout_s", "max_retries", "max_concurrency")},
        **{name: SamplingConfig.RANGES[name] for name in SAMPLING_FIELDS},
    }
    """The allowed values of the number keys: the endpoint's and the sampling's own, checked first
    (naming the key under :attr:`SECTION`) and shown in the flags' help."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_s: float = EndpointConfig.timeout_s
    max_retries: int = EndpointConfig.max_retries
    max_concurrency: int = EndpointConfig.max_concurrency
    structured_output: str = EndpointConfig.structured_output
    temperature: float = SamplingConfig.temperature
    top_p: float = SamplingConfig.top_p
    top_k: int | None = SamplingConfig.top_k
    max_tokens: int | None = SamplingConfig.max_tokens

    def __post_init__(self) -> None:
        check_ranges(self, prefix=f"{self.SECTION}.")
        check_choices(self, prefix=f"{self.SECTION}.", none_ok=True)
        check_api_key_env(self.api_key_env)
        if self.needs_endpoint:
            if not self.base_url or not self.model:
                raise InputError(self.missing_endpoint_message())
            self.endpoint()  # validates the endpoint settings now rather than at the first call
        self.sampling()  # likewise the sampling settings

    @property
    def needs_endpoint(self) -> bool:
        """Whether these settings call an LLM (then ``base_url`` and ``model`` are required)."""
        return True

    def missing_endpoint_message(self) -> str:
        """The error for a configuration that needs an endpoint and names none."""
        return f"{self.SECTION} needs base_url and model {self.endpoint_hint()}."

    def endpoint_hint(self) -> str:
        """What was given and how to set it, for the messages of :meth:`missing_endpoint_message`."""
        return (
            f"(got base_url={self.base_url!r}, model={self.model!r}); set e.g. "
            f"+{self.SECTION}.base_url=http://host:8000/v1 +{self.SECTION}.model=<served name>"
        )

    def endpoint(self) -> EndpointConfig:
        """The endpoint as the shared chat client takes it.

        Raises:
            InputError: when ``base_url`` or ``model`` is unset, or a value is invalid.
        """
        if not self.base_url or not self.model:
            raise InputError(f"{type(self).__name__} has no endpoint (base_url and model are unset).")
        return EndpointConfig(
            base_url=self.base_url,
            model=self.model,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            max_concurrency=self.max_concurrency,
            structured_output=self.structured_output,
        )

    def sampling(self) -> SamplingConfig:
        """Sampling of one request of this role."""
        return self.sampling_with()

    def sampling_with(self, **overrides: Any) -> SamplingConfig:
        """These settings' sampling with ``overrides`` (``n``, ``seed``, a role's ``max_tokens``)."""
        return SamplingConfig(**{**{name: getattr(self, name) for name in SAMPLING_FIELDS}, **overrides})
