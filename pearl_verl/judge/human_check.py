"""``pearl-verl judge-check --human``: does the judge agree with teachers' labels on single tutor responses?

``judge-check``'s contrast pairs are ours; MRBench's labels are teachers' (docs/judge.md, "Against human
teachers: MRBench"). This module judges every candidate response of the chosen conversations with the
selected judge, one turn at a time (:mod:`pearl_verl.judge.one_turn`), hands the scores to the arithmetic
of :mod:`pearl_verl.judge.human_agreement`, and builds the report (the command that prints and writes it is
:mod:`pearl_verl.judge.human_check_cli`). The conversations measured
are ``--splits`` (default the test split); the thresholds of the macro-F1 are always chosen on the train
and val splits, which are judged too, and never on a measured split.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.data.mrbench import HumanConversation, read_human_labels, select_splits
from pearl_verl.errors import InputError
from pearl_verl.judge.human_agreement import (
    MAPPED,
    MAPPING,
    MEASURED_SPLITS,
    TUNING_SPLITS,
    DimensionAgreement,
    RatedResponse,
    agreement_by_dimension,
    below_floor,
    mapped_score,
)
from pearl_verl.judge.one_turn import OneTurnJudge, TurnJudgement, candidate_episode, problem_of
from pearl_verl.stats import Estimate, wilson_ci

ALL = "all"
"""``--splits all``: every row, for a file without splits (the BEA 2025 files); no thresholds then."""

BEA_2025_BEST = {"Mistake_Identification": 0.718, "Providing_Guidance": 0.583}
"""Exact macro-F1 of the BEA 2025 shared task's best systems: classifiers trained on these labels."""


@dataclass
class HumanCheckReport:
    """What ``judge-check --human`` measured.

    Attributes:
        file: the human-label file.
        splits: the measured splits (``["all"]`` for every row).
        measured: the measured conversations.
        tuning: the conversations the thresholds were chosen on (none when a measured split is a tuning split).
        judgements: per conversation (measured first, then tuning), per response, its judgement.
        results: per mapped dimension, agreement on ``measured`` and macro-F1 from thresholds on ``tuning``.
        notes: what the reader must know to read the numbers.
        mapping: human dimension -> the judge's criteria compared with it (the judge's ``human_mapping``).
    """

    file: Path
    splits: list[str]
    measured: list[HumanConversation]
    tuning: list[HumanConversation]
    judgements: list[list[TurnJudgement]]
    results: dict[str, DimensionAgreement] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mapping: Mapping[str, tuple[str, ...] | None] = field(default_factory=lambda: MAPPING)

    @property
    def all_judgements(self) -> list[TurnJudgement]:
        return [j for row in self.judgements for j in row]

    def parse_rate(self) -> Estimate:
        """Share of judgements that came back (measured and tuning responses), 95% interval."""
        judged = self.all_judgements
        return wilson_ci(sum(j.ok for j in judged), len(judged))

    def endpoint_failures(self) -> Counter[str]:
        """Failed judgements whose endpoint failed (``http_401``, ``connection``, ...), by reason."""
        return Counter((j.reason or "").removeprefix("llm_") for j in self.all_judgements
                       if not j.ok and (j.reason or "").startswith("llm_"))

    def failures(self) -> list[str]:
        """The failed judgements, each as ``row N (conversation_id X), TUTOR: error``."""
        out = []
        for conversation, row in zip(self.measured + self.tuning, self.judgements):
            for response, judgement in zip(conversation.responses, row):
                if not judgement.ok:
                    out.append(f"row {conversation.index + 1} ({conversation.conversation_id}), {response.tutor}: "
                               f"{judgement.error}")
        return out

    def below(self, min_agreement: float) -> list[str]:
        return below_floor(self.results, min_agreement)

    def measured_any(self) -> bool:
        return any(r.count.pairs for r in self.results.values())

    def passes(self, min_agreement: float, min_parse_rate: float) -> bool:
        return (self.measured_any() and not self.below(min_agreement)
                and self.parse_rate().mean >= min_parse_rate)

    def verdict(self, min_agreement: float, min_parse_rate: float) -> str:
        """One sentence a person reads: does this judge agree with the teachers, and if not, where not."""
        parse = self.parse_rate()
        judged = len(self.all_judgements)
        down = sum(self.endpoint_failures().values())
        if down and 2 * down >= judged:  # a dead or refusing server is no verdict on the model
            kinds = ", ".join(f"{kind} {count}" for kind, count in self.endpoint_failures().most_common())
            return (f"the judge endpoint failed on {down} of {judged} judgements ({kinds}): nothing can be said "
                    "of the judge model. Check the server (its URL, --model, the key in --api-key-env, its log) "
                    "and run this again.")
        if not self.measured_any():
            return (f"no mapped dimension has two differently labelled responses to one conversation in "
                    f"{self.file.name} ({', '.join(self.splits)}): nothing was measured.")
        measured = {d: r.count.estimate for d, r in self.results.items() if r.count.estimate is not None}
        if self.passes(min_agreement, min_parse_rate):
            low = min(measured, key=lambda d: measured[d].mean)
            high = max(measured, key=lambda d: measured[d].mean)
            return (f"the judge agrees with the teachers above the floor on every mapped dimension: it orders "
                    f"{measured[low].mean:.0%} ({low}) to {measured[high].mean:.0%} ({high}) of the pairs as they "
                    f"do (floor {min_agreement:.0%}) and {parse.mean:.0%} of its judgements parse.")
        reasons = []
        under = self.below(min_agreement)
        if under:
            shown = ", ".join(f"{d} {measured[d].mean:.0%}" for d in under)
            reasons.append(f"it orders under {min_agreement:.0%} of the pairs as the teachers do on {shown}")
        if parse.mean < min_parse_rate:
            reasons.append(f"only {parse.mean:.0%} of its judgements parse (floor {min_parse_rate:.0%})")
        return "the judge does not agree with the teachers: " + " and ".join(reasons) + "."

    def to_dict(self, min_agreement: float, min_parse_rate: float) -> dict[str, Any]:
        rows = []
        for conversation, judged in zip(self.measured + self.tuning, self.judgements):
            for response, judgement in zip(conversation.responses, judged):
                rows.append({
                    "row": conversation.index + 1,
                    "conversation_id": conversation.conversation_id,
                    "split": conversation.split,
                    "tutor": response.tutor,
                    "labels": response.labels,
                    "scores": _mapped(judgement, self.mapping),
                    "criteria": dict(judgement.scores) if judgement.scores else None,
                    "rationales": ({c: judgement.rationales[c] for d in MAPPED for c in self.mapping[d] or ()}
                                   if judgement.rationales else None),
                    "error": judgement.error,
                })
        return {
            "file": str(self.file),
            "splits": self.splits,
            "conversations": len(self.measured),
            "responses": sum(len(c.responses) for c in self.measured),
            "tuning_splits": sorted({c.split for c in self.tuning if c.split}),
            "tuning_conversations": len(self.tuning),
            "tuning_responses": sum(len(c.responses) for c in self.tuning),
            "by_dimension": {d: r.to_dict() for d, r in self.results.items()},
            "not_mapped": [d for d, criteria in self.mapping.items() if not criteria],
            "parse_rate": self.parse_rate().to_dict(),
            "min_agreement": min_agreement,
            "min_parse_rate": min_parse_rate,
            "below_floor": self.below(min_agreement),
            "passed": self.passes(min_agreement, min_parse_rate),
            "verdict": self.verdict(min_agreement, min_parse_rate),
            "failures": self.failures()[:20],
            "endpoint_failures": dict(self.endpoint_failures()),
            "notes": self.notes,
            "judgements": rows,
        }


def _mapped(judgement: TurnJudgement, mapping: Mapping[str, tuple[str, ...] | None] = MAPPING
            ) -> dict[str, float] | None:
    if not judgement.ok or not judgement.scores:
        return None
    return {d: mapped_score(judgement.scores, d, mapping) for d in MAPPED}


def choose_conversations(
    path: Path, splits: Sequence[str], limit: int | None = None
) -> tuple[list[HumanConversation], list[HumanConversation], list[str]]:
    """The measured and the tuning conversations of ``path``, and notes on what was chosen.

    Args:
        path: an MRBench or BEA 2025 file.
        splits: the measured splits, or ``["all"]`` for every row (a file without splits).
        limit: keep the first ``limit`` conversations of each (a quick look); None keeps all.

    Raises:
        InputError: the file is malformed (the reader's located errors), or ``splits`` cannot be applied.
    """
    conversations = read_human_labels(path)
    notes = []
    if list(splits) == [ALL]:
        measured, tuning = conversations, []
        notes.append("every row measured (--splits all): no thresholds, no macro-F1")
    else:
        if ALL in splits:
            raise InputError(f"--splits {ALL} stands alone; got {','.join(splits)}.")
        try:
            measured = select_splits(conversations, splits, path)
        except InputError as exc:
            if any(c.split is None for c in conversations):  # the reader's "read it whole" is this flag here
                raise InputError(f"{exc}: --splits {ALL}") from None
            raise
        if set(splits) & set(TUNING_SPLITS):
            tuning = []
            notes.append(f"a measured split is one the thresholds are chosen on ({'+'.join(TUNING_SPLITS)}): "
                         "no macro-F1")
        else:
            tuning = [c for c in conversations if c.split in TUNING_SPLITS]
            if not tuning:
                notes.append(f"{path.name} has no {'/'.join(TUNING_SPLITS)} split to choose thresholds on: no macro-F1")
    if limit is not None:
        measured, tuning = measured[:limit], tuning[:limit]
        notes.append(f"--limit {limit}: the first {limit} conversations of each set only")
    return measured, tuning, notes


def rated_responses(
    conversations: Sequence[HumanConversation], judgements: Sequence[Sequence[TurnJudgement]],
    mapping: Mapping[str, tuple[str, ...] | None] = MAPPING,
) -> list[RatedResponse]:
    """Each response's human classes and the judge's mapped scores, for the arithmetic."""
    return [
        RatedResponse(conversation.index, response.classes, _mapped(judgement, mapping))
        for conversation, judged in zip(conversations, judgements)
        for response, judgement in zip(conversation.responses, judged)
    ]


async def judge_responses(
    judge: OneTurnJudge,
    conversations: Sequence[HumanConversation],
    concurrency: int = 4,
    on_judged: Callable[[], None] | None = None,
) -> list[list[TurnJudgement]]:
    """Judge every response of every conversation as its next tutor turn, ``concurrency`` at a time."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(conversation: HumanConversation, text: str) -> TurnJudgement:
        episode = candidate_episode(conversation.turns, text, problem_of(conversation))
        async with semaphore:
            result = await judge.judge_turn(episode)
        if on_judged is not None:
            on_judged()
        return result

    rows = [asyncio.gather(*(one(c, r.text) for r in c.responses)) for c in conversations]
    return [list(row) for row in await asyncio.gather(*rows)]


async def check_human(
    judge: OneTurnJudge,
    path: Path,
    splits: Sequence[str] = MEASURED_SPLITS,
    limit: int | None = None,
    concurrency: int = 4,
    on_judged: Callable[[], None] | None = None,
    chosen: tuple[list[HumanConversation], list[HumanConversation], list[str]] | None = None,
) -> HumanCheckReport:
    """Judge the measured and tuning conversations of ``path`` and measure agreement (see the module docstring)."""
    measured, tuning, notes = chosen or choose_conversations(path, splits, limit)
    judged = await judge_responses(judge, measured + tuning, concurrency, on_judged)
    inner = getattr(judge, "judge", judge)  # the OneTurnJudge's judge
    mapping = getattr(inner, "human_mapping", MAPPING)
    report = HumanCheckReport(path, list(splits), measured, tuning, judged, notes=notes, mapping=mapping)
    report.results = agreement_by_dimension(rated_responses(measured, judged[:len(measured)], mapping),
                                            rated_responses(tuning, judged[len(measured):], mapping), mapping)
    fitted_on = getattr(getattr(inner, "model", None), "meta", {}).get("trained_on", {})
    if fitted_on.get("sha256") and fitted_on["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest():
        report.notes.append(f"the fitted judge's parameters were fitted on {path.name} itself, these rows included: "
                            "this agreement is on what the fit saw; pearl-verl judge-fit's cross-validated report is "
                            "the held-out figure")
    report.notes.append("pairs of one conversation share a history, so each interval is narrower than "
                        "independent pairs would make it")
    return report
