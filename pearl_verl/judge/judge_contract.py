"""The judge's public contract: what a judgement returns, and the protocol every judge implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pearl_verl.dialogue.episode import EpisodeRecord

NOT_GIVEN = "(not given)"
"""A problem's reference answer (or solution, or question) where its source has none: MRBench's Bridge rows
and the BEA 2025 files give no answer (:mod:`pearl_verl.judge.one_turn`). The offline judge then detects
no revealed answer (:mod:`pearl_verl.judge.features`); the one-turn prompt tells an LLM judge the reference
is absent."""


@dataclass(frozen=True)
class CriterionScore:
    """One rubric criterion's verdict.

    Attributes:
        dimension: one of :data:`pearl_verl.dims.DIMENSIONS`.
        criterion: the criterion id within the dimension.
        raw: the discrete score the judge gave, on the criterion's own scale.
        score: ``raw`` mapped to [0, 1], before the completion gate.
        rationale: the judge's short justification.
    """

    dimension: str
    criterion: str
    raw: int
    score: float
    rationale: str = ""


@dataclass(frozen=True)
class JudgeResult:
    """The judgement of one dialogue.

    Attributes:
        ok: False when the judge failed for good (endpoint down, output unparsable after retries);
            then ``dims`` is None and the sample must be excluded from training (judge_ok=0).
        dims: per dimension, the mean of its completion-gated criterion scores in [0, 1].
        gate: the completion indicator g (1 complete, 0 incomplete); None when not ok.
        criteria: every criterion verdict, ungated.
        error: why it failed, when not ok.
        reason: the failure's kind, when known: ``llm_<reason>`` for the endpoint (``llm_http_401``,
            ``llm_connection``, ``llm_timeout``: the server, not the model), ``parse_<reason>`` for output
            that failed the rubric's contract (the model).
        attempts: judge completions received and used (parse retries and self-consistency samples
            included; extra completions a server sent beyond those asked for are not).
        unparsed: of those completions, the ones that failed the output contract (the judge model
            not following the format: a weak judge shows here before its judgements fail).
        latency_s: wall time of the judgement.
    """

    ok: bool
    dims: Mapping[str, float] | None = None
    gate: int | None = None
    criteria: tuple[CriterionScore, ...] = ()
    error: str | None = None
    reason: str | None = None
    attempts: int = 0
    unparsed: int = 0
    latency_s: float = 0.0


@runtime_checkable
class TutoringJudge(Protocol):
    """Scores a whole dialogue; implemented by the LLM judge and the offline heuristic judge."""

    async def judge(self, episode: EpisodeRecord) -> JudgeResult:
        """Never raises for a bad dialogue or a failing endpoint: returns ``ok=False`` instead."""
        ...
