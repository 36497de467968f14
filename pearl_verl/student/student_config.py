"""``StudentConfig``: the student simulator's settings (to sit under the root ``pearl.student`` section)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from pearl_verl.llm.chat_types import SamplingConfig
from pearl_verl.llm.settings import EndpointSettings
from pearl_verl.ranges import POSITIVE, Range

SIMULATORS: tuple[str, ...] = ("pearl", "mathdial", "socraticlm")
BACKENDS: tuple[str, ...] = ("offline", "llm")
PLANNERS: tuple[str, ...] = ("llm", "rules")
DECOMPOSERS: tuple[str, ...] = ("llm", "rules")
PARSE_FAILURE_POLICIES: tuple[str, ...] = ("fallback", "raise")


@dataclass(frozen=True)
class StudentConfig(EndpointSettings):
    """Settings of the simulated student: the endpoint and sampling keys of :class:`EndpointSettings`, and these.

    Attributes:
        simulator: ``pearl`` (the controllable simulator), ``mathdial`` or ``socraticlm`` (the
            prompt-only baselines used for cross-simulator evaluation; LLM backend only).
        backend: ``llm`` (an OpenAI-compatible endpoint, e.g. ``vllm serve``) or ``offline`` (the
            deterministic CPU stand-in: rule planner and template realiser; not the paper's model).
        model: the served model name (paper: Qwen3-30B-A3B-Instruct-2507).
        temperature: student sampling temperature (paper: 1.0).
        top_k: top-k sampling (paper: 50); None leaves the server default.
        max_tokens: cap on one student message's tokens (realiser and refine calls).
        planner_max_tokens: cap on one planner reply, a one-line JSON object: a model that rambles
            past it has failed the format anyway, and its tokens would only cost time.
        planner: ``llm`` (an LLM call chooses the behaviour labels) or ``rules`` (the offline
            planner's labels; one LLM call per turn fewer).
        refine: run the refine call when the cheap consistency check fails.
        parse_attempts: LLM calls a role may spend on replies that fail strict parsing (>= 1).
        on_parse_failure: ``fallback`` (use the offline role for that turn, counted) or ``raise``
            (raise ``LLMCallError`` with reason ``parse``, which ends the episode flagged).
        decomposer: ``llm`` or ``rules``; None picks ``llm`` for backend ``llm``, else ``rules``.
        cache_dir: directory of the decomposition cache; None keeps decompositions in memory only.
        curriculum_path: a custom curriculum JSON; None uses the shipped one.
        strict_prerequisites: reject an explicit initial mastery that puts a unit above one of its
            prerequisites (ValueError); False keeps such a state as stated.
        allow_leaving: let a frustrated student end the session.
        max_message_chars: longest allowed student message (longer ones fail the cheap check).
    """

    SECTION: ClassVar[str] = "pearl.student"
    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = {
        **EndpointSettings.CHOICES,
        "simulator": SIMULATORS,
        "backend": BACKENDS,
        "planner": PLANNERS,
        "on_parse_failure": PARSE_FAILURE_POLICIES,
        "decomposer": DECOMPOSERS,
    }
    RANGES: ClassVar[Mapping[str, Range]] = {
        **EndpointSettings.RANGES,
        "planner_max_tokens": POSITIVE,
        "parse_attempts": Range(int, why="1: no retry after a bad reply"),
        "max_message_chars": Range(int, low=20),
    }

    simulator: str = "pearl"
    backend: str = "offline"
    top_k: int | None = 50
    max_tokens: int | None = 256
    planner_max_tokens: int = 128
    planner: str = "llm"
    refine: bool = True
    parse_attempts: int = 2
    on_parse_failure: str = "fallback"
    decomposer: str | None = None
    cache_dir: str | None = None
    curriculum_path: str | None = None
    strict_prerequisites: bool = True
    allow_leaving: bool = True
    max_message_chars: int = 600

    @property
    def needs_endpoint(self) -> bool:
        """Whether any part of this configuration calls an LLM."""
        return self.backend == "llm" or self.decomposer == "llm" or self.simulator != "pearl"

    def missing_endpoint_message(self) -> str:
        return (
            f"simulator={self.simulator!r}, backend={self.backend!r}, decomposer={self.decomposer!r} need an "
            f"endpoint, but base_url={self.base_url!r}, model={self.model!r}. Set both (e.g. "
            f"{self.SECTION}.base_url=http://host:8000/v1 {self.SECTION}.model=<served name>) or use backend=offline."
        )

    @property
    def decomposer_kind(self) -> str:
        """The decomposer actually used (``decomposer`` or the backend's default)."""
        return self.decomposer or ("llm" if self.backend == "llm" else "rules")

    def sampling(self, role: str = "realiser") -> SamplingConfig:
        """Sampling of one of the student's generative roles (``planner``, ``realiser``, ``refine``)."""
        from pearl_verl.student.student_prompts import PLANNER_SCHEMA

        if role == "planner":
            return self.sampling_with(max_tokens=self.planner_max_tokens, response_schema=PLANNER_SCHEMA)
        return self.sampling_with()
