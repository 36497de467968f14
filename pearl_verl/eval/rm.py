"""Reward-model agreement with pairwise preferences (the paper's 300-pair teacher study format).

A preference pair is one JSON line::

    {"id": "...", "a": EpisodeRecord, "b": EpisodeRecord, "preferred": "a" | "b",
     "margin": "low" | "medium" | "high"}

Both dialogues tutor the same problem for the same student condition (checked). The reward model
under test picks a side; agreement is the share of pairs where it picks ``preferred``, overall and
per margin bucket, with 95% Wilson intervals. A tie (equal scores) counts as a disagreement and is
reported; a pair the model could not score is flagged and left out, never counted either way.

Reward models (:class:`PairScorer`):
- :class:`JudgeScorer`: any :class:`~pearl_verl.judge.judge_contract.TutoringJudge` (the trained judge, an
  external model prompted with our rubric, or the offline test double) scores each dialogue; the
  score is the mean of the 8 dimensions.
- :class:`PairwiseScorer`: a chat endpoint is shown both dialogues (order randomised per pair from a
  seed) and must answer ``{"preferred": "A" | "B"}``.
- :class:`ScalarScorer`: a sequence-classification reward model (e.g. MathTutorBench's) scores each
  dialogue as a conversation.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pearl_verl.dialogue.episode import TUTOR, EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_unique_records
from pearl_verl.judge.judge_contract import TutoringJudge
from pearl_verl.judge.reward_info import reward_info, reward_score
from pearl_verl.llm.chat_types import ChatBackend, LLMCallError, Message, SamplingConfig
from pearl_verl.row_kinds import stamped
from pearl_verl.stats import Estimate, wilson_ci

logger = logging.getLogger(__name__)

MARGINS: tuple[str, ...] = ("low", "medium", "high")
SIDES: tuple[str, ...] = ("a", "b")


@dataclass(frozen=True)
class PreferencePair:
    """Two dialogues for the same problem and student condition, and which one teachers preferred."""

    id: str
    a: EpisodeRecord
    b: EpisodeRecord
    preferred: str
    margin: str

    def __post_init__(self) -> None:
        if self.preferred not in SIDES:
            raise InputError(f"pair {self.id}: preferred={self.preferred!r} must be 'a' or 'b'.")
        if self.margin not in MARGINS:
            raise InputError(f"pair {self.id}: margin={self.margin!r} must be one of {list(MARGINS)}.")
        if self.a.problem != self.b.problem or self.a.condition != self.b.condition:
            raise InputError(
                f"pair {self.id}: both dialogues must tutor the same problem for the same student condition "
                f"(got {self.a.problem.problem_id!r} vs {self.b.problem.problem_id!r})."
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "preferred": self.preferred,
            "margin": self.margin,
        }


def read_pairs(path: Path) -> list[PreferencePair]:
    """Every pair of a JSONL file.

    Raises:
        InputError: for a malformed line or a repeated id (file and line are named).
    """
    return read_unique_records(path, _preference_pair, lambda p: p.id, "preference pair", "pair id")


def _preference_pair(row: Any, number: int) -> PreferencePair:
    return PreferencePair(
        str(row.get("id", f"pair-{number}")),
        EpisodeRecord.from_dict(row["a"]),
        EpisodeRecord.from_dict(row["b"]),
        str(row["preferred"]).lower(),
        str(row["margin"]).lower(),
    )


@dataclass(frozen=True)
class PairVerdict:
    """What a reward model said about one pair.

    Attributes:
        ok: False when it could not decide (then the pair is flagged and left out).
        choice: ``a``, ``b`` or ``tie``.
        score_a: the score of dialogue a (pointwise models; None for pairwise ones).
        score_b: the score of dialogue b.
        error: why it failed.
    """

    ok: bool
    choice: str | None = None
    score_a: float | None = None
    score_b: float | None = None
    error: str | None = None


class PairScorer(Protocol):
    """Picks the better dialogue of a pair; never raises for a failing backend."""

    label: str

    async def compare(self, pair: PreferencePair) -> PairVerdict: ...


def _choice(score_a: float, score_b: float) -> str:
    return "a" if score_a > score_b else "b" if score_b > score_a else "tie"


class JudgeScorer:
    """Scores each dialogue with a tutoring judge; the higher 8-dimension mean wins."""

    def __init__(self, judge: TutoringJudge, label: str) -> None:
        self.judge = judge
        self.label = label

    async def compare(self, pair: PreferencePair) -> PairVerdict:
        scores = []
        for episode in (pair.a, pair.b):
            info = reward_info(episode, await self.judge.judge(episode))
            if not info["judge_ok"]:
                return PairVerdict(False, error=f"judge could not score dialogue of pair {pair.id}")
            scores.append(reward_score(info))
        return PairVerdict(True, _choice(*scores), scores[0], scores[1])


class ScalarScorer:
    """Scores each dialogue with a scalar reward model over the conversation (MathTutorBench-style)."""

    def __init__(self, model: Any, label: str, system_prompt: str) -> None:
        self.model = model
        self.label = label
        self.system_prompt = system_prompt

    def conversation(self, episode: EpisodeRecord) -> list[Message]:
        """System prompt, problem and reference as the user, then tutor=assistant, student=user."""
        head = f"Problem: {episode.problem.question}\nReference Solution: {episode.problem.reference_solution}"
        messages: list[Message] = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": head}]
        messages += [{"role": "assistant" if t.role == TUTOR else "user", "content": t.text} for t in episode.turns]
        return messages

    async def compare(self, pair: PreferencePair) -> PairVerdict:
        try:
            score_a = await self.model.score(self.conversation(pair.a))
            score_b = await self.model.score(self.conversation(pair.b))
        except (RuntimeError, ValueError) as exc:  # torch / tokenizer failures: flag the pair
            logger.warning("reward model failed on pair %s: %s", pair.id, exc)
            return PairVerdict(False, error=f"reward model failed: {exc}")
        return PairVerdict(True, _choice(score_a, score_b), score_a, score_b)


PAIRWISE_INSTRUCTION = (
    "You are an expert mathematics teacher. You will read two tutoring dialogues, A and B, in which a tutor helps "
    "the same student with the same problem. Decide which TUTOR teaches better overall: correct mathematics, no "
    "premature revealing of the answer or key steps, a complete session that reaches a verified answer, manageable "
    "steps, Socratic questioning that keeps the student reasoning, prompts to reflect and check, adaptation to the "
    "student's state, and a supportive tone. Answer with one JSON object and nothing else: "
    '{"preferred": "A"} or {"preferred": "B"}.'
)
_VERDICT = re.compile(r"\A\s*(?:```(?:json)?\s*)?(\{[^{}]*\})\s*(?:```)?\s*\Z", re.DOTALL)


def _render(episode: EpisodeRecord) -> str:
    return "\n".join(f"{'Tutor' if t.role == TUTOR else 'Student'}: {t.text}" for t in episode.turns)


class PairwiseScorer:
    """Asks a chat endpoint which dialogue is better; A/B order is randomised per pair from ``seed``."""

    def __init__(
        self,
        backend: ChatBackend,
        label: str,
        seed: int = 0,
        parse_retries: int = 2,
        sampling: SamplingConfig | None = None,
    ) -> None:
        self.backend = backend
        self.label = label
        self.seed = seed
        self.parse_retries = parse_retries
        self.sampling = sampling or SamplingConfig(temperature=0.0, max_tokens=64)

    def messages(self, pair: PreferencePair, swapped: bool) -> list[Message]:
        first, second = (pair.b, pair.a) if swapped else (pair.a, pair.b)
        body = (
            f"Problem: {pair.a.problem.question}\nCorrect final answer: {pair.a.problem.answer}\n\n"
            f"Dialogue A:\n{_render(first)}\n\nDialogue B:\n{_render(second)}"
        )
        return [{"role": "system", "content": PAIRWISE_INSTRUCTION}, {"role": "user", "content": body}]

    async def compare(self, pair: PreferencePair) -> PairVerdict:
        swapped = random.Random(f"rm-order|{self.seed}|{pair.id}").random() < 0.5
        messages = self.messages(pair, swapped)
        error = ""
        for _ in range(self.parse_retries + 1):
            try:
                result = await self.backend.chat(messages, self.sampling)
            except LLMCallError as exc:
                return PairVerdict(False, error=f"reward-model call failed: {exc}")
            side = _parse_side(result.text)
            if side is None:
                error = f"unparsable verdict {result.text[:80]!r}"
                continue
            picked_a = (side == "A") != swapped
            return PairVerdict(True, "a" if picked_a else "b")
        return PairVerdict(False, error=error)


def _parse_side(text: str) -> str | None:
    match = _VERDICT.match(text.strip())
    if match is None:
        return None
    try:
        data = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or set(data) != {"preferred"} or data["preferred"] not in ("A", "B"):
        return None
    return str(data["preferred"])


def verdict_row(pair: PreferencePair, verdict: PairVerdict, label: str) -> dict[str, Any]:
    """The JSONL line of one compared pair."""
    return stamped("rm_verdict", {
        "id": pair.id,
        "reward_model": label,
        "margin": pair.margin,
        "preferred": pair.preferred,
        "ok": verdict.ok,
        "choice": verdict.choice,
        "agree": (verdict.choice == pair.preferred) if verdict.ok else None,
        "score_a": verdict.score_a,
        "score_b": verdict.score_b,
        "error": verdict.error,
    })


def agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Agreement overall and per margin bucket (Wilson intervals), plus tie and flag counts."""
    ok = [r for r in rows if r["ok"]]
    result: dict[str, Any] = {
        "pairs": len(rows),
        "flagged": len(rows) - len(ok),
        "ties": sum(r["choice"] == "tie" for r in ok),
    }
    buckets: dict[str, Estimate | None] = {}
    for margin in MARGINS:
        mine = [r for r in ok if r["margin"] == margin]
        buckets[margin] = wilson_ci(sum(bool(r["agree"]) for r in mine), len(mine)) if mine else None
    overall = wilson_ci(sum(bool(r["agree"]) for r in ok), len(ok)) if ok else None
    result["by_margin"] = {m: (e.to_dict() if e is not None else None) for m, e in buckets.items()}
    result["overall"] = overall.to_dict() if overall is not None else None
    return result


def agreement_markdown(label: str, result: Mapping[str, Any]) -> str:
    """The paper's reward-model agreement table (percent, 95% Wilson interval, n)."""

    def fmt(e: Mapping[str, Any] | None) -> str:
        if e is None:
            return "—"
        return f"{100 * e['mean']:.1f} [{100 * e['low']:.1f}, {100 * e['high']:.1f}] (n={e['n']})"

    head = "| Reward Model | Low Margin | Medium Margin | High Margin | Overall | ties | flagged |"
    row = (
        f"| {label} | "
        + " | ".join(fmt(result["by_margin"][m]) for m in MARGINS)
        + f" | {fmt(result['overall'])} | {result['ties']} | {result['flagged']} |"
    )
    note = (
        "Agreement (%) with the preferred side, 95% Wilson interval; a tie counts as a disagreement; flagged pairs "
        "(the model could not score them) are left out."
    )
    title = "# Reward-model agreement with pairwise preferences"
    return f"{title}\n\n{note}\n\n{head}\n|---|---|---|---|---|---|---|\n{row}\n"


def parse_margins(text: str) -> tuple[float, float]:
    """``--margins LOW,HIGH``: the score gaps (0-100) that split low/medium and medium/high margins.

    Raises:
        InputError: for anything but two numbers.
    """
    low, sep, high = text.partition(",")
    try:
        if not sep:
            raise ValueError(text)
        return float(low), float(high)
    except ValueError:
        raise InputError(f"--margins {text!r} must be two numbers LOW,HIGH (e.g. 5,15).") from None


def pairs_from_results(
    rows: Sequence[Mapping[str, Any]], tutor_a: str, tutor_b: str, thresholds: tuple[float, float] = (5.0, 15.0)
) -> list[PreferencePair]:
    """Preference pairs from a judged eval-tutor run: the same item under two tutors.

    ``preferred`` is the side the run's judge scored higher and ``margin`` buckets the score
    difference on the 0-100 scale (below ``thresholds[0]`` low, below ``thresholds[1]`` medium,
    else high), as the paper buckets pairs by an external evaluator's score difference. Teachers'
    preferences replace ``preferred`` for a human study. Items scored equally are skipped.
    """
    from pearl_verl.eval.tables import dialogue_avg, judged

    low, medium = thresholds
    if not 0 <= low <= medium:
        raise InputError(f"margin thresholds {thresholds} must satisfy 0 <= low <= medium (0-100 scale).")
    by_item: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        if row["tutor"] in (tutor_a, tutor_b) and judged(row):
            by_item.setdefault((row["simulator"], row["item_id"]), {})[row["tutor"]] = row
    pairs = []
    for (simulator, item), both in sorted(by_item.items()):
        if len(both) != 2:
            continue
        diff = 100 * (dialogue_avg(both[tutor_a]["judge"]) - dialogue_avg(both[tutor_b]["judge"]))
        if diff == 0:
            continue
        margin = "low" if abs(diff) < low else "medium" if abs(diff) < medium else "high"
        pairs.append(
            PreferencePair(
                f"{simulator}|{item}|{tutor_a}-vs-{tutor_b}",
                EpisodeRecord.from_dict(both[tutor_a]["episode"]),
                EpisodeRecord.from_dict(both[tutor_b]["episode"]),
                "a" if diff > 0 else "b",
                margin,
            )
        )
    return pairs
