"""The judge's settings (``+reward.reward_kwargs.*`` in verl, flags of ``pearl-verl judge``).

One frozen dataclass for every backend (:mod:`pearl_verl.judge.backends`): ``llm`` (an OpenAI-compatible endpoint,
e.g. the finetuned Qwen3-32B judge behind ``vllm serve``) and the CPU judges (never the paper's judge).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pearl_verl.judge import llm_judge
from pearl_verl.judge.backends import CPU_JUDGES, JUDGE_BACKENDS, PromptBuilder
from pearl_verl.judge.judge_contract import TutoringJudge
from pearl_verl.judge.scoring import AGGREGATES
from pearl_verl.llm.chat_types import SamplingConfig
from pearl_verl.llm.settings import EndpointSettings
from pearl_verl.ranges import COUNT, Range
from pearl_verl.strict_dataclass import build_dataclass

BACKENDS: tuple[str, ...] = tuple(JUDGE_BACKENDS)
"""Every backend's name, in the table's order."""


@dataclass(frozen=True)
class JudgeConfig(EndpointSettings):
    """How dialogues are judged: the endpoint and sampling keys of :class:`EndpointSettings`, and these.

    Attributes:
        backend: ``llm`` (an OpenAI-compatible endpoint, e.g. the finetuned Qwen3-32B judge),
            ``offline`` (the heuristic CPU test double), ``fitted`` (the CPU judge fitted to teachers'
            labels) or ``probe``/``probe-openings`` (test doubles for the learning tests).
        fitted_params: the ``fitted`` judge's parameters (``pearl-verl judge-fit -o FILE``); unset: the
            shipped fit on MRBench V2.
        timeout_s: per-HTTP-attempt timeout in seconds (a judgement with rationales is long).
        max_concurrency: requests in flight from one judge. verl runs ``reward.num_workers``
            reward-loop workers (default 8), each with its own judge: the endpoint sees up to
            ``num_workers * max_concurrency`` requests at once.
        parse_retries: extra judge calls when no sample of a call parses; then the sample is
            flagged (judge_ok=0).
        samples: self-consistency samples per dialogue.
        aggregate: ``mean`` or ``median`` of each criterion over the parsed samples.
        samples_per_request: ask for all samples in one request (OpenAI/vLLM ``n``); False sends
            ``samples`` separate requests (endpoints without ``n``, or to spread them over replicas).
        temperature: judge sampling temperature.
        top_k: judge top-k; None leaves the server default.
        max_tokens: cap on one judgement's tokens.
        seed: sampling seed (varied per retry so a retry is a new draw); None for none.
    """

    SECTION: ClassVar[str] = "reward.reward_kwargs"
    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = {
        **EndpointSettings.CHOICES, "backend": BACKENDS, "aggregate": AGGREGATES
    }
    RANGES: ClassVar[Mapping[str, Range]] = {
        **EndpointSettings.RANGES,
        "parse_retries": COUNT,
        "samples": Range(int, why="1 turns self-consistency off"),
        "seed": SamplingConfig.RANGES["seed"],
    }

    backend: str = "llm"
    timeout_s: float = 300.0
    max_concurrency: int = 32
    parse_retries: int = llm_judge.PARSE_RETRIES
    samples: int = llm_judge.SAMPLES
    aggregate: str = llm_judge.AGGREGATE
    samples_per_request: bool = True
    temperature: float = llm_judge.PAPER_JUDGE_SAMPLING.temperature
    top_k: int | None = llm_judge.PAPER_JUDGE_SAMPLING.top_k
    max_tokens: int | None = llm_judge.PAPER_JUDGE_SAMPLING.max_tokens
    seed: int | None = None
    fitted_params: str | None = None

    @property
    def needs_endpoint(self) -> bool:
        return JUDGE_BACKENDS[self.backend].needs_endpoint

    def missing_endpoint_message(self) -> str:
        return (f"judge backend {self.backend!r} needs base_url and model {self.endpoint_hint()}, or "
                f"backend={' or '.join(CPU_JUDGES)} on a CPU.")

    def sampling(self) -> SamplingConfig:
        """Sampling of one judge request (``n`` = samples when they share a request)."""
        return self.sampling_with(n=self.samples if self.samples_per_request else 1, seed=self.seed)


def judge_config_from_mapping(values: Mapping[str, Any] | None, path: str = "reward.reward_kwargs") -> JudgeConfig:
    """A :class:`JudgeConfig` from plain settings (e.g. verl's ``reward.reward_kwargs``).

    Raises:
        InputError: for an unknown key (naming the valid keys) or an invalid value.
    """
    return build_dataclass(JudgeConfig, dict(values or {}), path)


def build_judge(config: JudgeConfig, prompt: PromptBuilder | None = None) -> TutoringJudge:
    """The judge ``config.backend`` names (:data:`~pearl_verl.judge.backends.JUDGE_BACKENDS`).

    Args:
        config: the settings.
        prompt: an LLM judge's message builder (``LLMJudge(prompt=...)``, e.g.
            :func:`~pearl_verl.judge.prompt.one_turn_messages`); None for the whole-dialogue prompt.
            The other backends have no prompt and ignore it.
    """
    return JUDGE_BACKENDS[config.backend].build(config, prompt)
