"""Simulation runs: problems from files, student conditions by ability, episodes, per-turn rows, summaries.

Used by ``pearl-verl simulate`` and by the controllability and diversity tests. Every dialogue runs
through :func:`pearl_verl.dialogue.episode_runner.run_episode`, exactly as in training and evaluation.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.problem import SimulationItem
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, CognitiveProfile, StudentCondition, StudentSimulator
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.errors import InputError
from pearl_verl.row_kinds import stamped
from pearl_verl.student.diversity import LabelledTurn

ABILITY_CHOICES: tuple[str, ...] = (*ABILITY_LEVELS, "mixed", "all")
"""``low``/``medium``/``high``: a profile from that band; ``mixed``: any of the 243 profiles;
``all``: every problem once per band (the controllability protocol)."""

ALL_PROFILES: tuple[CognitiveProfile, ...] = tuple(CognitiveProfile(*v) for v in itertools.product((1, 2, 3), repeat=5))


def sample_profile(ability: str, rng: random.Random) -> CognitiveProfile:
    """A profile drawn uniformly from a band (``low``/``medium``/``high``) or from all 243 (``mixed``)."""
    if ability == "mixed":
        return rng.choice(ALL_PROFILES)
    if ability not in ABILITY_LEVELS:
        raise InputError(f"ability={ability!r} must be one of {list(ABILITY_LEVELS)} or 'mixed'.")
    return rng.choice([p for p in ALL_PROFILES if p.ability == ability])


@dataclass(frozen=True)
class Job:
    """One dialogue to run."""

    index: int
    item: SimulationItem
    condition: StudentCondition
    seed: int


def make_jobs(items: Sequence[SimulationItem], ability: str, seed: int) -> list[Job]:
    """Dialogues for ``items``: one per problem, or one per problem and band with ``ability="all"``."""
    if ability not in ABILITY_CHOICES:
        raise InputError(f"ability={ability!r} must be one of {list(ABILITY_CHOICES)}.")
    bands = ABILITY_LEVELS if ability == "all" else (ability,)
    jobs = []
    for band, (i, item) in itertools.product(bands, enumerate(items)):
        rng = random.Random(f"profile|{seed}|{band}|{item.problem.problem_id}")
        condition = StudentCondition(
            sample_profile(band, rng), seed=seed * 1_000_003 + i, misconception=item.misconception
        )
        jobs.append(Job(len(jobs), item, condition, seed))
    return jobs


async def run_jobs(
    simulator: StudentSimulator,
    tutor: TutorPolicy,
    jobs: Sequence[Job],
    limits: EpisodeLimits,
    concurrency: int = 1,
    on_done: Callable[[Job, EpisodeRecord], None] | None = None,
) -> list[EpisodeRecord]:
    """Run every job through :func:`run_episode`, at most ``concurrency`` at a time; results in job order.

    ``on_done(job, episode)`` is called as each dialogue finishes (in finishing order), so a caller can
    write it at once and lose nothing to a kill.
    """
    semaphore = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> EpisodeRecord:
        async with semaphore:
            problem = job.item.problem
            opening = simulator.opening(problem, job.condition)
            session = await simulator.start(problem, job.condition, job.seed, opening)
            episode = await run_episode(problem, job.condition, session, opening, policy_step(tutor, problem), limits)
        if on_done is not None:
            on_done(job, episode)
        return episode

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def turn_rows(episode: EpisodeRecord, dialogue: int) -> list[dict[str, Any]]:
    """One JSON-ready row per student turn (the opening included) with the state behind it.

    Every row carries ``dialogue_rows``, how many rows its dialogue has, so that a reader can tell a
    dialogue whose rows were all written from one a kill cut short.
    """
    rows = list(_turn_rows(episode, dialogue))
    for row in rows:
        row["dialogue_rows"] = len(rows)
    return rows


def _turn_rows(episode: EpisodeRecord, dialogue: int) -> Iterator[dict[str, Any]]:
    profile = episode.condition.profile
    student_turns = [i for i, t in enumerate(episode.turns) if t.role == STUDENT]
    for state, position in zip(episode.student_trace, student_turns):
        previous = episode.turns[position - 1] if position > 0 and episode.turns[position - 1].role == TUTOR else None
        yield stamped("student_turn", {
            "dialogue": dialogue,
            "problem_id": episode.problem.problem_id,
            "turn": state.turn,
            "tutor_message": previous.text if previous else None,
            "student_message": episode.turns[position].text,
            "intent": list(state.intent),
            "attempt": state.attempt,
            "mastery": dict(state.mastery),
            "profile": profile.to_dict(),
            "ability": profile.ability,
            "solved": state.solved,
            "concluded": state.concluded,
            "llm_calls": state.llm_calls,
            "plan_source": state.plan_source,
            "reply_source": state.reply_source,
            "end_reason": episode.end_reason,
        })


HELP_OR_CONFUSION = frozenset({"help_seeking", "uncertainty"})

Dialogue = Sequence[Mapping[str, Any]]
"""One dialogue as its :func:`turn_rows` (the opening first): what the summaries read, fresh or resumed."""


def dialogue_rows(episodes: Sequence[EpisodeRecord]) -> list[list[dict[str, Any]]]:
    """Each episode's :func:`turn_rows`."""
    return [turn_rows(episode, index) for index, episode in enumerate(episodes)]


def labelled_dialogues(episodes: Sequence[EpisodeRecord]) -> list[list[LabelledTurn]]:
    """Each episode's planned labels, opening excluded (the input of the diversity statistics)."""
    return labelled_rows(dialogue_rows(episodes))


def labelled_rows(dialogues: Sequence[Dialogue]) -> list[list[LabelledTurn]]:
    """:func:`labelled_dialogues` of dialogues given as their rows."""
    return [[LabelledTurn(r["attempt"], frozenset(r["intent"])) for r in rows[1:]] for rows in dialogues]


def by_ability(episodes: Sequence[EpisodeRecord]) -> dict[str, dict[str, float]]:
    """Per ability band: reply turns, share of correct attempts, share of help-seeking/confusion turns, solved share."""
    return ability_table(dialogue_rows(episodes))


def ability_table(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, float]]:
    """:func:`by_ability` of dialogues given as their rows."""
    groups: dict[str, list[Dialogue]] = defaultdict(list)
    for rows in dialogues:
        if rows:
            groups[rows[0]["ability"]].append(rows)
    summary = {}
    for band in ABILITY_LEVELS:
        if band not in groups:
            continue
        replies = [r for rows in groups[band] for r in rows[1:]]
        n = max(1, len(replies))
        summary[band] = {
            "dialogues": len(groups[band]),
            "turns": len(replies),
            "correct_share": sum(r["attempt"] == "correct" for r in replies) / n,
            "help_or_confusion_share": sum(bool(HELP_OR_CONFUSION & set(r["intent"])) for r in replies) / n,
            "solved_share": sum(bool(rows[-1]["solved"]) for rows in groups[band]) / len(groups[band]),
        }
    return summary


def call_summary(episodes: Sequence[EpisodeRecord]) -> dict[str, float]:
    """LLM calls: in total, per reply turn (opening excluded) and per student turn (opening included)."""
    return call_table(dialogue_rows(episodes))


def source_table(dialogues: Sequence[Dialogue]) -> dict[str, dict[str, float]]:
    """Shares of reply turns by ``plan_source`` and by ``reply_source`` (opening excluded).

    A run against a weak or misconfigured student endpoint shows here as fallbacks: turns whose
    labels or message came from the rules and templates, not from the model.
    """
    replies = [r for rows in dialogues for r in rows[1:]]
    table = {}
    for field in ("plan_source", "reply_source"):
        counts = Counter(str(r.get(field)) for r in replies)
        table[field] = {source: count / len(replies) for source, count in sorted(counts.items())}
    return table


def call_table(dialogues: Sequence[Dialogue]) -> dict[str, float]:
    """:func:`call_summary` of dialogues given as their rows."""
    replies = [r for rows in dialogues for r in rows[1:]]
    openings = [rows[0] for rows in dialogues if rows]
    reply_calls = sum(r["llm_calls"] for r in replies)
    opening_calls = sum(r["llm_calls"] for r in openings)
    return {
        "reply_turns": len(replies),
        "llm_calls": reply_calls + opening_calls,
        "decomposition_calls": opening_calls,
        "calls_per_reply_turn": reply_calls / len(replies) if replies else 0.0,
        "calls_per_student_turn": (reply_calls + opening_calls) / max(1, len(replies) + len(openings)),
    }
