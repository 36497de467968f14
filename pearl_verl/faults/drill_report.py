"""A fault drill's numbers: what was injected, how the client and judge absorbed it, what got flagged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pearl_verl.dims import JUDGE_OK_KEY
from pearl_verl.faults.drill import DrillReport
from pearl_verl.faults.plan import FAULT_KINDS, Injection
from pearl_verl.faults.recording import CallRecord
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS


def endpoint_summary(injections: Sequence[Injection], calls: Sequence[CallRecord], bound: int) -> dict[str, Any]:
    """Requests, injected faults, logical calls, retries and failures of one endpoint."""
    kinds = Counter(i.kind.value if i.kind is not None else "none" for i in injections)
    requests = len(injections)
    return {
        "requests": requests,
        "faults": requests - kinds.get("none", 0),
        "fault_share": (requests - kinds.get("none", 0)) / requests if requests else 0.0,
        "by_kind": {kind: kinds.get(kind, 0) for kind in FAULT_KINDS},
        "calls": len(calls),
        "retries": sum(c.attempts for c in calls) - len(calls),
        "max_attempts": max((c.attempts for c in calls), default=0),
        "attempt_bound": bound,
        "failed_calls": sum(not c.ok for c in calls),
        "failure_reasons": dict(Counter(c.reason for c in calls if not c.ok)),
    }


def summarize(report: DrillReport) -> dict[str, Any]:
    """The drill's numbers as a plain dict (for BENCHMARKS.md and JSON output)."""
    config = report.config
    rows = [report.rows[e.id] for e in report.episodes]
    failed_episode = [e.record.end_reason in FAILED_EPISODE_REASONS for e in report.episodes]
    flagged = [row[JUDGE_OK_KEY] == 0 for row in rows]
    flagged_advantages = [abs(a) for a, f in zip(report.advantages, flagged, strict=True) if f]
    return {
        "episodes": len(report.episodes),
        "groups": config.groups,
        "group_size": config.group_size,
        "fault_rate": config.fault_rate,
        "seed": config.seed,
        "end_reasons": dict(Counter(e.record.end_reason for e in report.episodes)),
        "student": endpoint_summary(report.student_injections, report.student_calls, 1 + config.student_max_retries),
        "judge_resumed": endpoint_summary(report.judge_injections, report.judge_calls, 1 + config.judge_max_retries),
        "killed_run": {
            "killed": report.killed_run.killed,
            "rows_before_kill": len(report.killed_run.lines),
            "requests": report.killed_run.requests,
            "seconds": report.killed_run.seconds,
        },
        "resumed": {"skipped": report.resumed.skipped, "judged": report.resumed.judged},
        "scored": sum(not f for f in flagged),
        "flagged_failed_episode": sum(f and e for f, e in zip(flagged, failed_episode, strict=True)),
        "flagged_judge_failure": sum(f and not e for f, e in zip(flagged, failed_episode, strict=True)),
        "max_abs_advantage_flagged": max(flagged_advantages, default=0.0),
        "seconds": dict(report.seconds),
    }


def markdown(summary: Mapping[str, Any], violations: Mapping[str, Sequence[str]]) -> str:
    """The summary and check results as Markdown tables."""
    student, judge = summary["student"], summary["judge_resumed"]
    lines = [
        f"{summary['episodes']} episodes ({summary['groups']} groups x {summary['group_size']}), "
        f"{summary['fault_rate']:.0%} faults per request on both endpoints, seed {summary['seed']}.",
        "",
        "| endpoint | requests | faults injected | logical calls | retries | max attempts (bound) | failed calls |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, data in (("student", student), ("judge (resumed run)", judge)):
        lines.append(
            f"| {name} | {data['requests']} | {data['faults']} ({data['fault_share']:.1%}) | {data['calls']} | "
            f"{data['retries']} | {data['max_attempts']} ({data['attempt_bound']}) | {data['failed_calls']} |"
        )
    lines += ["", "| fault kind | student requests | judge requests |", "|---|---:|---:|"]
    lines += [f"| {kind} | {student['by_kind'][kind]} | {judge['by_kind'][kind]} |" for kind in FAULT_KINDS]
    killed = summary["killed_run"]
    lines += [
        "",
        f"Samples: {summary['scored']} scored, {summary['flagged_failed_episode']} flagged because the student "
        f"endpoint failed for good, {summary['flagged_judge_failure']} flagged because the judge failed; largest "
        f"|advantage| of a flagged sample: {summary['max_abs_advantage_flagged']}.",
        f"Judge run killed with SIGKILL after {killed['rows_before_kill']} rows ({killed['seconds']:.1f} s); "
        f"the resumed run skipped {summary['resumed']['skipped']} and judged {summary['resumed']['judged']}.",
        "Wall time: " + ", ".join(f"{k} {v:.1f} s" for k, v in summary["seconds"].items()) + ".",
        "",
        "| check | violations |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {len(found)} |" for name, found in violations.items()]
    return "\n".join(lines)
