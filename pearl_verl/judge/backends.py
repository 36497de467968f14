"""The judge backends, in one table: each name, how it is built and what it is for.

Every list of backends derives from :data:`JUDGE_BACKENDS`: ``JudgeConfig``'s choices (verl's
``reward.reward_kwargs.backend``, ``judge`` and ``judge-check``'s ``--backend``), those that score the rubric's
criteria (the evaluation commands' ``--judge``, gen-sft's gate, the one-turn check), those that need no endpoint
(train-local's ``--judge``), and the labels and notes reports print for a CPU judge. Adding a backend is its own
module and one entry here (docs/judge.md, "Adding a judge backend").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pearl_verl.judge.probe import PROBES, ProbeJudge

if TYPE_CHECKING:
    import argparse

    from pearl_verl.judge.judge_contract import TutoringJudge
    from pearl_verl.llm.chat_types import Message

PromptBuilder = Callable[..., "list[Message]"]
JudgeConfig = Any
"""A :class:`~pearl_verl.judge.judge_config.JudgeConfig`, which this table cannot import: that module reads its choices
from here."""


@dataclass(frozen=True)
class JudgeBackend:
    """One judge backend.

    Attributes:
        build: the judge of a config naming this backend, and an LLM judge's message builder (None: the
            whole-dialogue prompt; the other backends have no prompt and ignore it).
        needs_endpoint: it calls an OpenAI-compatible endpoint (``base_url`` and ``model`` required).
        scores_criteria: it scores the rubric's criteria, so evaluations, the SFT gate and the one-turn check can use
            it; False for the probes, test doubles that reward one surface property for learning tests.
        label: how evaluation tables name its scores; None: the judge's own label (``--judge-label``, or the model
            and endpoint).
        note: what a report prints beside its scores, so that no table passes a CPU judge off as the paper's.
        params: the config fields besides the shared ones that change its scores (a resumed run must keep them).
    """

    build: Callable[[JudgeConfig, PromptBuilder | None], TutoringJudge]
    needs_endpoint: bool = False
    scores_criteria: bool = True
    label: str | None = None
    note: str | None = None
    params: tuple[str, ...] = ()


def _llm(config: JudgeConfig, prompt: PromptBuilder | None) -> TutoringJudge:
    from pearl_verl.judge.llm_judge import LLMJudge
    from pearl_verl.llm.client import OpenAIChatClient

    client = OpenAIChatClient(config.endpoint(), config.sampling(), seed=config.seed)
    return LLMJudge(client, config.sampling(), samples=config.samples, aggregate=config.aggregate,
                    parse_retries=config.parse_retries, samples_per_request=config.samples_per_request,
                    **({"prompt": prompt} if prompt is not None else {}))


def _offline(config: JudgeConfig, prompt: PromptBuilder | None) -> TutoringJudge:
    from pearl_verl.judge.offline import HeuristicJudge

    return HeuristicJudge()


def _fitted(config: JudgeConfig, prompt: PromptBuilder | None) -> TutoringJudge:
    from pathlib import Path

    from pearl_verl.judge.fitted.judge import FittedJudge

    return FittedJudge(Path(config.fitted_params) if config.fitted_params else None)


def _probe(name: str) -> Callable[[JudgeConfig, PromptBuilder | None], TutoringJudge]:
    def build(config: JudgeConfig, prompt: PromptBuilder | None) -> TutoringJudge:
        return ProbeJudge(PROBES[name])
    return build


JUDGE_BACKENDS: Mapping[str, JudgeBackend] = {
    "llm": JudgeBackend(_llm, needs_endpoint=True),
    "fitted": JudgeBackend(
        _fitted, params=("fitted_params",),
        label="fitted CPU judge (one-turn criteria learned from teachers' labels: NOT the paper's judge)",
        note="fitted CPU judge (one-turn criteria learned from teachers' labels, the rest heuristic), not the "
             "paper's judge"),
    "offline": JudgeBackend(
        _offline,
        label="offline HeuristicJudge (a CPU test double: NOT the paper's judge, NOT an external evaluator)",
        note="offline heuristic judge (a CPU test double), not the paper's judge"),
    **{name: JudgeBackend(_probe(name), scores_criteria=False) for name in PROBES},
}
"""Every judge backend by name: ``llm`` is the paper's judge (the finetuned Qwen3-32B behind an endpoint); the others
run on a CPU without one (``probe*``: :mod:`pearl_verl.judge.probe`)."""


def judge_backends(*, scores_criteria: bool | None = None, needs_endpoint: bool | None = None) -> tuple[str, ...]:
    """The names of the backends with these properties (None: either), in the table's order."""
    return tuple(name for name, backend in JUDGE_BACKENDS.items()
                 if scores_criteria in (None, backend.scores_criteria)
                 and needs_endpoint in (None, backend.needs_endpoint))


BACKEND_SETTINGS: tuple[str, ...] = tuple(dict.fromkeys(
    name for backend in JUDGE_BACKENDS.values() for name in backend.params))
"""Every backend's own settings (``params``), once each: the flags a judging command adds for them."""

CPU_JUDGES = judge_backends(scores_criteria=True, needs_endpoint=False)
"""The judges that score the rubric on a CPU without an endpoint: what an error offers instead of an endpoint."""


def require_endpoint_flags_of(args: argparse.Namespace, backend: str, prefix: str = "",
                              flag: str = "--backend") -> None:
    """A command judging with ``backend`` got its endpoint flags when that backend needs an endpoint.

    Raises:
        InputError: naming the two flags and, instead, the CPU judges ``flag`` takes.
    """
    from pearl_verl.llm.cli_flags import require_endpoint_flags

    if JUDGE_BACKENDS[backend].needs_endpoint:
        require_endpoint_flags(args, prefix, "judge", f"{flag} {' or '.join(CPU_JUDGES)} (CPU judges, not the paper's)")
