"""Trainer metrics of the PEARL advantage step, keyed ``pearl/<component>/<name>``.

verl's metric aggregator picks min/max/sum/mean reduction from substrings of the key, so each
key here ends in the statistic it holds (``/mean``, ``/max``...) or a name free of those words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from pearl_verl.advantage.estimator import AdvantageBreakdown
from pearl_verl.advantage.failure_guard import FAILURE_RATE_KEY, HTTP_STATUS_KEY, PARSE_FAILURE_RATE_KEY
from pearl_verl.advantage.inputs import PearlInputs
from pearl_verl.judge.reward_info import common_http_status, reply_counts


def advantage_metrics(
    inputs: PearlInputs,
    breakdown: AdvantageBreakdown,
    dims: Sequence[str],
) -> dict[str, float]:
    """Per-dimension reward means, judge failure rate, turns and advantage statistics.

    Args:
        inputs: the estimator inputs of the batch.
        breakdown: the estimator's intermediates for the same batch.
        dims: dimension names, in ``inputs.dim_scores`` column order.

    Returns:
        Scalar metrics over real samples (verl's synthetic padding rows are left out). Means over
        scored samples are omitted when no sample was scored.
    """
    counted = torch.ones(len(inputs), dtype=torch.bool) if inputs.padding is None else ~inputs.padding
    total = int(counted.sum())
    if total == 0:
        return {}
    scored = inputs.valid & counted
    n_scored = int(scored.sum())
    metrics = {
        FAILURE_RATE_KEY: 1.0 - n_scored / total,
        "pearl/episode/completed_rate": inputs.completed[counted].double().mean().item(),
        "pearl/episode/tutor_turns/mean": inputs.num_turns[counted].mean().item(),
        "pearl/advantage/groups_without_contrast": float(breakdown.groups_without_contrast),
    }
    if n_scored == 0:
        return metrics
    adv = breakdown.advantages[scored].double()
    metrics.update(
        {
            "pearl/advantage/mean": adv.mean().item(),
            "pearl/advantage/std": adv.std(unbiased=False).item(),
            "pearl/advantage/max": adv.max().item(),
            "pearl/advantage/min": adv.min().item(),
            "pearl/advantage/nonzero_frac": (adv != 0).double().mean().item(),
        }
    )
    raw = inputs.dim_scores[scored]
    shaped = breakdown.rewards[scored].double()
    for k, dim in enumerate(dims):
        metrics[f"pearl/reward/{dim}/mean"] = raw[:, k].mean().item()
        metrics[f"pearl/reward/{dim}/shaped_mean"] = shaped[:, k].mean().item()
    return metrics


FALLBACK_RATE_KEY = "pearl/student/fallback_rate"
FALLBACK_FIELDS = ("pearl_student_replies", "pearl_student_fallbacks")
"""The agent loop's per-dialogue counts behind :data:`FALLBACK_RATE_KEY` (``extra_fields`` / columns)."""


def fallback_counts(trace: Sequence[Any]) -> dict[str, int]:
    """A dialogue's student reply turns, and those whose labels or message fell back to the rules.

    Args:
        trace: the episode's ``student_trace`` (the opening first, not counted).
    """
    replies = list(trace[1:])
    fallbacks = sum("fallback" in (state.plan_source, state.reply_source) for state in replies)
    return dict(zip(FALLBACK_FIELDS, (len(replies), fallbacks), strict=True))


def student_fallback_metrics(rows: Sequence[Mapping[str, Any] | None]) -> dict[str, float]:
    """``pearl/student/fallback_rate``: the share of student replies not written by the student model.

    A student endpoint that answers but never in a usable form leaves the dialogues running on
    templates; this is where a run shows it. Rows without the counts (another agent loop, verl's
    padding) are left out; {} when no row has a reply.
    """
    replies = sum(int(row.get(FALLBACK_FIELDS[0]) or 0) for row in rows if row)
    fallbacks = sum(int(row.get(FALLBACK_FIELDS[1]) or 0) for row in rows if row)
    return {FALLBACK_RATE_KEY: fallbacks / replies} if replies else {}


def judge_parse_metrics(infos: Sequence[Mapping[str, Any] | None]) -> dict[str, float]:
    """``pearl/judge/parse_failure_rate``: the share of the step's judge replies that failed to parse; and
    ``pearl/judge/http_status``, the most frequent HTTP status of a failing judge endpoint, when one failed so.

    Parse retries hide a weak judge until its judgements fail outright (``pearl/judge/failure_rate``);
    this rate shows it earlier, and tells a judge that answers in the wrong form from one that is
    down. Rows without the counts (verl's padding, an older reward manager) are left out; {} when no
    reply came back.

    Args:
        infos: each dialogue's reward fields (``judge_replies``, ``judge_unparsed``), None for padding.
    """
    replies, unparsed = reply_counts(infos)
    metrics = {PARSE_FAILURE_RATE_KEY: unparsed / replies} if replies else {}
    status = common_http_status(infos)
    return {**metrics, HTTP_STATUS_KEY: float(status)} if status else metrics
