"""How train-local's served roles did: the student's fallbacks and the judge's unparsed replies.

A served student too weak for its format does not stop a run: its replies fall back to the rules
and the run trains on template students. A served judge that answers in the wrong form is retried
until its judgements fail, and the failure guard stops a run whose judgements keep failing. Both
show per step in the metrics (``pearl/student/fallback_rate``, ``pearl/judge/parse_failure_rate``);
this reads them back over the run's training steps for the summary a person reads at the end, as
``simulate``, ``eval-tutor`` and ``gen-sft`` report theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pearl_verl.advantage.failure_guard import PARSE_FAILURE_RATE_KEY
from pearl_verl.advantage.metrics import FALLBACK_RATE_KEY
from pearl_verl.student.fallbacks import fallback_verdict

RATE_KEYS = {"student": FALLBACK_RATE_KEY, "judge": PARSE_FAILURE_RATE_KEY}
"""The per-step metric of each served role."""
_WHAT = {"student": "student replies that fell back to the rules", "judge": "judge replies that did not parse"}


def served_roles(verl_config: Any) -> tuple[str, ...]:
    """The roles a run serves from an endpoint (``student``, ``judge``), from its composed verl config."""
    from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root

    roles = []
    if pearl_config_from_root(verl_config).student.backend == "llm":
        roles.append("student")
    if str((verl_config.reward.get("reward_kwargs") or {}).get("backend", "offline")) == "llm":
        roles.append("judge")
    return tuple(roles)


def role_rates(rows: Sequence[Mapping[str, Any]], roles: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per served role: the mean and the worst step's rate over the training steps that logged it."""
    rates = {}
    for role in roles:
        values = [float(row[RATE_KEYS[role]]) for row in rows if RATE_KEYS[role] in row]
        if values:
            rates[role] = {"mean": sum(values) / len(values), "max": max(values), "steps": len(values)}
    return rates


def role_lines(rates: Mapping[str, Mapping[str, float]]) -> list[str]:
    """One line per served role, for summary.txt."""
    return [
        f"{_WHAT[role]}: {r['mean']:.0%} over {r['steps']:.0f} training steps (worst step {r['max']:.0%})"
        for role, r in rates.items()
    ]


def student_mode(verl_config: Any) -> str | None:
    """``pearl.student.structured_output`` when it names one mode (``auto`` picks it in each worker)."""
    from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root

    setting = pearl_config_from_root(verl_config).student.structured_output
    return None if setting == "auto" else setting


def role_verdict(rates: Mapping[str, Mapping[str, float]], max_fallback_rate: float,
                 mode: str | None = None) -> str | None:
    """The error line when the served student fell back on more than ``max_fallback_rate`` of its replies."""
    student = rates.get("student")
    if student is None:
        return None
    return fallback_verdict(student["mean"], max_fallback_rate, "pearl.student.structured_output=json_object", mode)
