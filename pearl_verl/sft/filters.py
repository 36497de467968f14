"""The filters between generated teacher dialogues and the cold-start SFT set.

The paper builds its 193K-sample cold-start set "after applying data filtering strategies such as
turn balancing" without listing them; ours, applied in this order, each drop counted under its
reason (a dialogue is counted once, under the first filter it fails):

Per dialogue (:func:`drop_reason`):

- ``backend_failure``: the teacher or the student endpoint failed for good (``tutor_error``,
  ``student_error``); ``gen-sft --retry-failed`` generates these again.
- ``incomplete``: the dialogue did not end normally (turn limit, token budget, or the student left
  without solving); only ``tutor_ended`` and ``student_concluded`` dialogues teach a whole session.
- ``too_short``: fewer than ``min_tutor_turns`` tutor turns (a one-message "session" is no tutoring).
- ``empty_tutor_turn``: a tutor message with no text (nothing to learn, and it breaks chat templates).
- ``answer_leak``: a tutor message states the final answer before the student has made
  ``attempts_before_answer`` attempts of their own. An attempt is a student reply (the opening
  does not count) whose planned outcome is correct, partial or incorrect; "states the answer" is
  the simulator's own reading (:func:`pearl_verl.student.reading.reveals_answer`: a number equal
  to the answer under math-verify, or the answer's exact text). When the answer is a number the
  question itself gives, a tutor restating that quantity cannot be told from a leak, and the
  filter does not apply to the problem.
- ``judge_failed`` / ``judge_incomplete`` / ``judge_low_score`` (only with a judge): the judgement
  failed (judge_ok=0), the judge's completion gate g is 0, or the mean of the 8 dimension scores is
  below ``judge_min_score``.
- ``too_long`` (only with a tokenizer): the rendered chat exceeds the SFT trainer's ``max_length``
  (verl's default ``truncation=error`` would stop training on it).

Over the whole set (:func:`deduplicate`, :func:`balance_turns`):

- ``duplicate``: the same problem and the same dialogue text (case and whitespace folded) as an
  earlier dialogue in job order.
- ``turn_balance``: no tutor-turn count may hold more than ``turn_balance`` times the mean number
  of dialogues per occupied count; the surplus of an over-full count is dropped by a stable hash
  of the dialogue id (so the kept set does not depend on generation order). 0 turns it off.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import sympy

from pearl_verl.dialogue.answers import numbers_in
from pearl_verl.dialogue.episode import STUDENT, TUTOR, EpisodeRecord
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dims import COMPLETED_KEY, JUDGE_OK_KEY
from pearl_verl.errors import InputError
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS, reward_score
from pearl_verl.ranges import POSITIVE, Range, check_ranges
from pearl_verl.student.reading import same_answer, stated_answer

DROP_REASONS: tuple[str, ...] = (
    "backend_failure",
    "incomplete",
    "too_short",
    "empty_tutor_turn",
    "answer_leak",
    "judge_failed",
    "judge_incomplete",
    "judge_low_score",
    "too_long",
    "duplicate",
    "turn_balance",
)
ATTEMPTS: frozenset[str] = frozenset({"correct", "partial", "incorrect"})


@dataclass(frozen=True)
class FilterConfig:
    """Settings of the SFT filters (``gen-sft`` flags).

    Attributes:
        min_tutor_turns: fewest tutor turns a kept dialogue has.
        attempts_before_answer: student attempts required before the tutor may state the answer.
        judge_min_score: lowest mean judge score kept (with a judge only).
        dedup: drop repeated dialogues.
        turn_balance: cap per tutor-turn count, as a multiple of the mean per occupied count.
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "min_tutor_turns": POSITIVE,
        "attempts_before_answer": Range(int, low=0, why="0: no leak filter"),
        "judge_min_score": Range(float, low=0, high=1, why="judge scores are in [0, 1]"),
        "turn_balance": Range(float, low=0, why="0 turns balancing off; a cap is at least 1"),
    }

    min_tutor_turns: int = 2
    attempts_before_answer: int = 1
    judge_min_score: float = 0.0
    dedup: bool = True
    turn_balance: float = 2.0

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.turn_balance != 0 and self.turn_balance < 1:
            raise InputError(
                f"turn_balance={self.turn_balance} must be 0 (off) or >= 1 (a cap below the mean would drop "
                "dialogues of every length)."
            )


def _fraction(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


@lru_cache(maxsize=4096)
def _gold_expression(answer: str) -> Any:
    """math-verify's reading of a final answer as one expression (sympy), or None."""
    from math_verify import parse

    # math-verify's timeout uses signal.alarm, which only the main thread may set.
    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    parsed = parse(f"${answer}$", parsing_timeout=timeout)
    return parsed[0] if parsed else None


@lru_cache(maxsize=1 << 16)
def equals_answer(answer: str, number: str) -> bool:
    """Whether ``number`` (from :func:`numbers_in`) is the final answer, as :func:`same_answer` decides.

    Cached, with shortcuts that never change the verdict: exact arithmetic when both are plain
    numbers; False when the answer is numeric and more than 1% away, or an expression with free
    symbols (``x^2+1``, ``6+9i``), which no bare number equals. Everything else asks math-verify.
    """
    gold, candidate = _fraction(answer.strip()), _fraction(number)
    if gold is not None and candidate is not None:
        return gold == candidate
    expression = _gold_expression(answer.strip())
    if candidate is not None and isinstance(expression, sympy.Expr):
        if expression.free_symbols:
            return False
        if expression.is_number:
            value = complex(expression.evalf())
            if abs(value - float(candidate)) > 0.01 * max(1.0, abs(value)):
                return False
    return same_answer(answer, number)


def reveals(problem: Problem, text: str) -> bool:
    """:func:`pearl_verl.student.reading.reveals_answer` (the simulator's rule) with cached comparisons:
    the answer's exact text (when not a bare integer), or a number equal to it."""
    answer = problem.answer.strip()
    if len(answer) > 1 and not answer.isdigit() and answer in text:
        return True
    return any(equals_answer(problem.answer, number) for number in numbers_in(text))


def first_leak(episode: EpisodeRecord, attempts_before_answer: int) -> int | None:
    """Index in ``episode.turns`` of the first tutor turn that states the answer too early, or None.

    Student turns are matched with ``episode.student_trace`` (one state per student turn); a turn
    without a state counts as an attempt when it states some final answer.
    """
    if attempts_before_answer == 0:
        return None
    problem = episode.problem
    if any(equals_answer(problem.answer, number) for number in numbers_in(problem.question)):
        return None
    states = iter(episode.student_trace)
    attempts, student_turns = 0, 0
    for index, turn in enumerate(episode.turns):
        if turn.role == STUDENT:
            state = next(states, None)
            if student_turns > 0:
                attempted = state.attempt in ATTEMPTS if state is not None else stated_answer(turn.text) is not None
                attempts += int(attempted)
            student_turns += 1
        elif attempts < attempts_before_answer and reveals(problem, turn.text):
            return index
    return None


def drop_reason(
    episode: EpisodeRecord,
    judge_info: Mapping[str, float | int] | None,
    config: FilterConfig,
    n_tokens: int | None = None,
    max_tokens: int | None = None,
) -> str | None:
    """The first per-dialogue filter ``episode`` fails, or None when it is kept.

    Args:
        episode: the dialogue.
        judge_info: the judge's reward fields (:func:`pearl_verl.judge.reward_info.reward_info`), or
            None when no judge ran.
        config: filter settings.
        n_tokens: the rendered chat's token count, when a tokenizer was given.
        max_tokens: the SFT trainer's ``max_length``, when a tokenizer was given.
    """
    if episode.end_reason in FAILED_EPISODE_REASONS:
        return "backend_failure"
    if not episode.ended_normally:
        return "incomplete"
    tutor_texts = [t.text for t in episode.turns if t.role == TUTOR]
    if len(tutor_texts) < config.min_tutor_turns:
        return "too_short"
    if not all(text.strip() for text in tutor_texts):
        return "empty_tutor_turn"
    if first_leak(episode, config.attempts_before_answer) is not None:
        return "answer_leak"
    if judge_info is not None:
        if not judge_info[JUDGE_OK_KEY]:
            return "judge_failed"
        if not judge_info[COMPLETED_KEY]:
            return "judge_incomplete"
        if reward_score(dict(judge_info)) < config.judge_min_score:
            return "judge_low_score"
    if n_tokens is not None and max_tokens is not None and n_tokens > max_tokens:
        return "too_long"
    return None


def dialogue_key(episode: EpisodeRecord) -> str:
    """What makes two dialogues duplicates: the problem and every turn's text, case and spaces folded."""
    parts = [episode.problem.problem_id, *(f"{t.role}:{' '.join(t.text.lower().split())}" for t in episode.turns)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def deduplicate(ids: Sequence[str], episodes: Mapping[str, EpisodeRecord]) -> tuple[list[str], list[str]]:
    """(kept ids, duplicate ids): the first of each :func:`dialogue_key`, in the order of ``ids``."""
    seen: set[str] = set()
    kept, dropped = [], []
    for key in ids:
        signature = dialogue_key(episodes[key])
        (dropped if signature in seen else kept).append(key)
        seen.add(signature)
    return kept, dropped


def balance_turns(ids: Sequence[str], turns: Mapping[str, int], factor: float) -> tuple[list[str], list[str]]:
    """(kept ids in their order, dropped ids): each tutor-turn count capped at ``factor`` x the mean count.

    Args:
        ids: dialogue ids in job order.
        turns: tutor turns per id.
        factor: the cap as a multiple of the mean number of dialogues per occupied turn count; 0 = off.
    """
    if factor == 0 or not ids:
        return list(ids), []
    by_count: dict[int, list[str]] = defaultdict(list)
    for key in ids:
        by_count[turns[key]].append(key)
    cap = math.ceil(factor * len(ids) / len(by_count))
    dropped: set[str] = set()
    for members in by_count.values():
        if len(members) > cap:
            ranked = sorted(members, key=lambda k: hashlib.sha256(f"pearl-balance|{k}".encode()).hexdigest())
            dropped.update(ranked[cap:])
    return [k for k in ids if k not in dropped], [k for k in ids if k in dropped]


def turn_histogram(turn_counts: Sequence[int]) -> dict[int, int]:
    """Dialogues per tutor-turn count, sorted by count."""
    return dict(sorted(Counter(turn_counts).items()))
