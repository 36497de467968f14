"""The per-dialogue reward fields every judge consumer writes (reward manager, ``pearl-verl judge``).

Always the same keys, so verl can stack them into columns: the 8 dimensions, ``judge_ok``,
``completed``, ``tutor_turns``, ``judge_latency_s``, and the judge replies the judgement took and
how many of them failed to parse (``judge_replies``, ``judge_unparsed``: the trainer's
``pearl/judge/parse_failure_rate``), and the HTTP status of a judge endpoint that failed for good
(``judge_http_status``, 0 otherwise: the trainer's ``pearl/judge/http_status``, which the failure
guard's stop names). A failed judgement keeps the keys with
neutral placeholders (0.0) and ``judge_ok=0``; the PEARL estimator drops ``judge_ok=0`` rows from
every statistic and gives them zero advantage, so the placeholders never act as scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dims import COMPLETED_KEY, DIMENSIONS, JUDGE_OK_KEY, TUTOR_TURNS_KEY
from pearl_verl.judge.judge_contract import JudgeResult

LATENCY_KEY = "judge_latency_s"
REPLIES_KEY = "judge_replies"
UNPARSED_KEY = "judge_unparsed"
HTTP_STATUS_KEY = "judge_http_status"
REWARD_INFO_KEYS: tuple[str, ...] = (
    *DIMENSIONS, JUDGE_OK_KEY, COMPLETED_KEY, TUTOR_TURNS_KEY, LATENCY_KEY, REPLIES_KEY, UNPARSED_KEY, HTTP_STATUS_KEY
)
PLACEHOLDER = 0.0
"""Value of every dimension and of ``reward_score`` when ``judge_ok == 0`` (excluded downstream)."""

FAILED_EPISODE_REASONS = frozenset({"student_error", "tutor_error"})
"""Episodes whose student or tutor backend failed for good: flagged (judge_ok=0), never judged."""


def should_judge(episode: EpisodeRecord | None) -> bool:
    """Whether a dialogue is judged at all (not for a missing episode or a backend failure)."""
    return episode is not None and episode.end_reason not in FAILED_EPISODE_REASONS


def not_judged_reason(episode: EpisodeRecord | None) -> str | None:
    """Why an episode is flagged without a judge call (its backend failed), or None to judge it.

    A missing episode (a malformed line) is not covered: it carries its own parse error.
    """
    if episode is None or should_judge(episode):
        return None
    return f"not judged: episode ended with {episode.end_reason}"


def reward_info(episode: EpisodeRecord | None, result: JudgeResult | None) -> dict[str, float | int]:
    """The reward fields of one dialogue.

    Args:
        episode: the judged episode, or None when the row carried none.
        result: the judgement, or None when there was nothing to judge.

    Returns:
        ``{dim: score in [0, 1], judge_ok: 0/1, completed: 0/1, tutor_turns: int,
        judge_latency_s: float, judge_replies: int, judge_unparsed: int}``. ``completed`` is 1 only when
        the episode ended normally AND the judge's completion gate g is 1. An episode whose backend
        failed is flagged (``judge_ok=0``) whatever ``result`` says.
    """
    judged = should_judge(episode) and result is not None and result.ok
    dims = result.dims if judged else None
    gate = result.gate if result is not None else None
    info: dict[str, float | int] = {d: float(dims[d]) if dims is not None else PLACEHOLDER for d in DIMENSIONS}
    info[JUDGE_OK_KEY] = int(dims is not None)
    info[COMPLETED_KEY] = int(dims is not None and episode is not None and episode.ended_normally and gate == 1)
    info[TUTOR_TURNS_KEY] = episode.tutor_turns if episode is not None else 0
    info[LATENCY_KEY] = float(result.latency_s) if result is not None else 0.0
    info[REPLIES_KEY] = int(result.attempts) if result is not None else 0
    info[UNPARSED_KEY] = int(result.unparsed) if result is not None else 0
    info[HTTP_STATUS_KEY] = http_status(result)
    return info


def http_status(result: JudgeResult | None) -> int:
    """The HTTP status of a judgement whose endpoint failed with one (``llm_http_401`` -> 401); 0 otherwise."""
    reason = (result.reason or "") if result is not None else ""
    code = reason.removeprefix("llm_http_")
    return int(code) if reason.startswith("llm_http_") and code.isdigit() else 0


def reward_score(info: dict[str, float | int]) -> float:
    """The scalar reward: the uniform mean of the 8 dimensions when judged, else the placeholder."""
    if not info.get(JUDGE_OK_KEY):
        return PLACEHOLDER
    return sum(float(info[d]) for d in DIMENSIONS) / len(DIMENSIONS)


def common_http_status(infos: Iterable[Mapping[str, Any] | None]) -> int:
    """The most frequent failing HTTP status among reward fields (ties: the lowest); 0 when none failed so."""
    counts = Counter(int(info.get(HTTP_STATUS_KEY) or 0) for info in infos if info)
    counts.pop(0, None)
    return min(counts, key=lambda status: (-counts[status], status)) if counts else 0


def reply_counts(infos: Iterable[Mapping[str, Any] | None]) -> tuple[int, int]:
    """(judge replies, of them unparsed) summed over reward fields; rows without the counts add 0."""
    rows = [info for info in infos if info]
    return tuple(sum(int(info.get(key) or 0) for info in rows) for key in (REPLIES_KEY, UNPARSED_KEY))


def unparsed_line(replies: int, unparsed: int) -> str | None:
    """``judge replies that did not parse: a/b (x%)`` for a summary, or None when none failed.

    Parse retries rescue most judgements of a weak judge, so its flagged count alone hides it; this
    is the share of its replies that did not follow the output contract (``judge-check`` measures
    whether the rest rank dialogues).
    """
    if not unparsed or not replies:
        return None
    return f"judge replies that did not parse: {unparsed}/{replies} ({100 * unparsed / replies:.0f}%)"
