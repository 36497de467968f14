"""What a fault drill must show, as checks that list every violation they find (empty = passed).

- :func:`check_complete`: the batch completed: one episode, one final result row and one advantage
  per sample, nothing extra.
- :func:`check_scored_or_flagged`: every sample is either scored with exactly the judgement the
  healthy judge endpoint gave, or flagged (``judge_ok=0`` with placeholder dimensions, because its
  episode failed or its judgement failed), never anything in between.
- :func:`check_flagged_zero_advantage`: flagged samples get advantage exactly 0 and take no part in
  any group statistic (the scored samples' advantages equal the estimator's on them alone).
- :func:`check_retry_bounds`: no logical call made more attempts than ``1 + max_retries``, the
  server saw no more requests per logical call than that, and no dialogue was judged in more
  rounds than ``1 + parse_retries``.
- :func:`check_outcomes_match_injections`: every failure was caused by injected faults and every
  injected fault run long enough to exhaust the retries caused a failure (student calls; judge
  outcomes predicted from the judge endpoint's fault plan).
- :func:`check_no_lost_results`: the judge run was killed mid-way, and every result line written
  before the kill survived unchanged and was not judged again.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pearl_verl.dims import DIMENSIONS, JUDGE_OK_KEY
from pearl_verl.faults.drill import JUDGE_MODEL, DrillReport, drill_advantages
from pearl_verl.faults.plan import TRANSPORT_FAULTS, FaultKind, Injection, fingerprint
from pearl_verl.faults.recording import CallRecord
from pearl_verl.faults.responders import expected_result
from pearl_verl.judge.prompt import judge_messages, user_message
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS, PLACEHOLDER

Check = Callable[[DrillReport], list[str]]


def check_complete(report: DrillReport) -> list[str]:
    """One episode, one final row and one advantage per sample of ``groups x group_size``."""
    problems = []
    ids = [e.id for e in report.episodes]
    if len(ids) != report.config.episodes or len(set(ids)) != len(ids):
        problems.append(f"{len(set(ids))} distinct episodes of {report.config.episodes} expected")
    missing = sorted(set(ids) - set(report.rows))
    extra = sorted(set(report.rows) - set(ids))
    if missing or extra:
        problems.append(f"result rows missing for {missing[:5]} ({len(missing)}), unknown ids {extra[:5]}")
    parsed = Counter(_line_id(line) for line in report.lines)
    parsed.pop(None, None)
    repeated = sorted(key for key, count in parsed.items() if count > 1)
    if repeated:
        problems.append(f"ids with more than one result line: {repeated[:5]} ({len(repeated)})")
    if not len(report.advantages) == len(report.valid) == len(ids):
        problems.append(f"{len(report.advantages)} advantages / {len(report.valid)} flags for {len(ids)} episodes")
    return problems


def check_scored_or_flagged(report: DrillReport) -> list[str]:
    """Scored rows carry the healthy judgement exactly; flagged rows carry placeholders and a cause."""
    problems = []
    for episode in report.episodes:
        row = report.rows.get(episode.id)
        if row is None:
            continue  # reported by check_complete
        failed_episode = episode.record.end_reason in FAILED_EPISODE_REASONS
        if row[JUDGE_OK_KEY] == 1:
            expected = expected_result(user_message(episode.record))
            assert expected.dims is not None
            wrong = [d for d in DIMENSIONS if not math.isclose(row[d], expected.dims[d], abs_tol=1e-12)]
            if failed_episode or row.get("error") is not None or wrong:
                problems.append(f"{episode.id}: scored but failed={failed_episode}, error={row.get('error')!r}, "
                                f"dimensions {wrong} differ from the judge's answer")
            if row["completed"] != int(episode.record.ended_normally and expected.gate == 1):
                problems.append(f"{episode.id}: completed={row['completed']} contradicts the episode and gate")
        elif row[JUDGE_OK_KEY] == 0:
            invented = [d for d in DIMENSIONS if row[d] != PLACEHOLDER]
            cause = failed_episode or bool(row.get("error"))
            if invented or not cause or row["completed"] != 0:
                problems.append(f"{episode.id}: flagged with dimensions {invented} set, cause={cause}, "
                                f"completed={row['completed']}")
        else:
            problems.append(f"{episode.id}: judge_ok={row[JUDGE_OK_KEY]!r} is neither 0 nor 1")
    return problems


def check_flagged_zero_advantage(report: DrillReport) -> list[str]:
    """Flagged samples: advantage exactly 0, and no influence on the scored samples' advantages."""
    problems = []
    for episode, advantage, valid in zip(report.episodes, report.advantages, report.valid, strict=True):
        ok = report.rows[episode.id][JUDGE_OK_KEY] == 1
        if valid != ok:
            problems.append(f"{episode.id}: estimator valid={valid} but judge_ok={int(ok)}")
        if not valid and advantage != 0.0:
            problems.append(f"{episode.id}: flagged but advantage {advantage!r}")
    scored = [e for e, v in zip(report.episodes, report.valid, strict=True) if v]
    alone, _ = drill_advantages(scored, report.rows)
    together = [a for a, v in zip(report.advantages, report.valid, strict=True) if v]
    moved = [e.id for e, a, b in zip(scored, alone, together, strict=True) if not math.isclose(a, b, abs_tol=1e-6)]
    if moved:
        problems.append(f"flagged samples changed the advantages of {moved[:5]} ({len(moved)})")
    return problems


def check_retry_bounds(report: DrillReport) -> list[str]:
    """Attempts per logical call, server requests per logical call, and judge rounds per dialogue."""
    config = report.config
    problems = _bounded("student", report.student_calls, report.student_injections, 1 + config.student_max_retries)
    problems += _bounded("judge", report.judge_calls, report.judge_injections, 1 + config.judge_max_retries)
    beyond = {
        _judge_fingerprint(e, report, config.judge_parse_retries + 1): e.id
        for e in report.episodes
        if e.id not in report.killed_run.lines
    }
    over = sorted({beyond[c.fingerprint] for c in report.judge_calls if c.fingerprint in beyond})
    if over:
        problems.append(f"judged in more than 1 + parse_retries rounds: {over[:5]} ({len(over)})")
    return problems


def _bounded(role: str, calls: Sequence[CallRecord], injections: Sequence[Injection], bound: int) -> list[str]:
    problems = [f"{role} call {c.fingerprint} ({c.tag}) made {c.attempts} attempts; bound {bound}"
                for c in calls if not 1 <= c.attempts <= bound]
    problems += [f"{role} call {c.fingerprint} ({c.tag}) gave up after {c.attempts} < {bound} attempts ({c.reason})"
                 for c in calls if not c.ok and c.attempts != bound]
    per_call: dict[str, int] = Counter(c.fingerprint for c in calls)
    attempts: dict[str, int] = defaultdict(int)
    for call in calls:
        attempts[call.fingerprint] += call.attempts
    served = Counter(i.fingerprint for i in injections)
    for key, count in served.items():
        if count > attempts.get(key, 0) or count > bound * per_call.get(key, 0):
            problems.append(f"{role} server saw {count} requests for {key}: {per_call.get(key, 0)} logical "
                            f"call(s) with {attempts.get(key, 0)} attempts, bound {bound} each")
    return problems


def check_outcomes_match_injections(report: DrillReport) -> list[str]:
    """Failures happen exactly where the injected faults exhausted the retries."""
    config = report.config
    bound = 1 + config.student_max_retries
    problems = _student_calls_match(report.student_calls, _by_fingerprint(report.student_injections), bound)
    failed_tags = {c.tag for c in report.student_calls if not c.ok}
    for episode in report.episodes:
        errored = episode.record.end_reason == "student_error"
        if errored != (episode.id in failed_tags):
            problems.append(f"{episode.id}: end_reason={episode.record.end_reason} but failed student call: "
                            f"{episode.id in failed_tags}")
    problems += _judge_outcomes_match(report)
    return problems


def _student_calls_match(calls: Sequence[CallRecord], served: dict[str, list[Injection]], bound: int) -> list[str]:
    problems = []
    shared = Counter(c.fingerprint for c in calls)
    for call in calls:
        kinds = [i.kind for i in served.get(call.fingerprint, [])]
        if shared[call.fingerprint] > 1:  # interchangeable calls: only totals are attributable
            if not call.ok and sum(k in TRANSPORT_FAULTS for k in kinds) < bound:
                problems.append(f"student call {call.fingerprint} ({call.tag}) failed without {bound} injected faults")
            continue
        if len(kinds) != call.attempts:
            problems.append(f"student call {call.fingerprint} ({call.tag}): {call.attempts} attempts, "
                            f"{len(kinds)} requests served")
        predicted = predict_call(as_the_client_saw(kinds, call.failed_attempts), bound)
        if predicted is None and call.ok or predicted is not None and not call.ok:
            problems.append(f"student call {call.fingerprint} ({call.tag}): ok={call.ok} but injections {kinds}")
        elif call.ok and (call.text == "") != (predicted is FaultKind.EMPTY_CONTENT):
            problems.append(f"student call {call.fingerprint} ({call.tag}): text {call.text!r}, injected {predicted}")
    return problems


def _judge_outcomes_match(report: DrillReport) -> list[str]:
    """Resumed-run rows (unique dialogues) against the outcome the judge endpoint's plan implies."""
    config = report.config
    served = _by_fingerprint(report.judge_injections)
    resumed = [e for e in report.episodes if e.id not in report.killed_run.lines]
    first = Counter(_judge_fingerprint(e, report, 0) for e in resumed)
    problems = []
    for episode in resumed:
        if first[_judge_fingerprint(episode, report, 0)] > 1:
            continue  # identical dialogues share their requests; outcomes are not attributable
        ok = True
        for round_ in range(1 + config.judge_parse_retries):
            kinds = [i.kind for i in served.get(_judge_fingerprint(episode, report, round_), [])]
            outcome = predict_call(kinds, 1 + config.judge_max_retries)
            ok = outcome not in (None, FaultKind.EMPTY_CONTENT)
            if outcome is not FaultKind.EMPTY_CONTENT:
                break
        expected = int(ok and episode.record.end_reason not in FAILED_EPISODE_REASONS)
        if report.rows[episode.id][JUDGE_OK_KEY] != expected:
            problems.append(f"{episode.id}: judge_ok={report.rows[episode.id][JUDGE_OK_KEY]}, the fault plan "
                            f"implies {expected}")
    return problems


def as_the_client_saw(kinds: Sequence[FaultKind | None], failed_attempts: Sequence[str]) -> list[FaultKind | None]:
    """The served kinds, with an answer the client timed out on before it arrived counted as a timeout.

    On a loaded machine an answer the server sent in time (clean, empty or slowly streamed) can
    still reach the client after its per-attempt timeout: the client retried, as it must, and the
    server's log alone would predict the answer it never read. Only a client-side ``timeout`` on
    that very attempt is taken as such; any other disagreement stays a mismatch.
    """
    seen = list(kinds)
    for attempt, reason in enumerate(failed_attempts[:len(seen)]):
        if reason == "timeout" and seen[attempt] not in TRANSPORT_FAULTS:
            seen[attempt] = FaultKind.TIMEOUT
    return seen


def predict_call(kinds: Sequence[FaultKind | None], bound: int) -> FaultKind | None | str:
    """How a logical call ends given the faults of its attempts, in order.

    Returns:
        None when the first ``bound`` attempts were all transport faults (the call fails); else the
        outcome of the first attempt that got through: ``"ok"``, or the non-transport fault kind
        (``EMPTY_CONTENT``, ``SLOW_STREAM``) it carried. ``"unseen"`` when the log ends first.
    """
    for kind in kinds[:bound]:
        if kind not in TRANSPORT_FAULTS:
            return "ok" if kind is None else kind
    return None if len(kinds) >= bound else "unseen"


def check_no_lost_results(report: DrillReport) -> list[str]:
    """Results written before the kill survive byte for byte and are never judged again."""
    killed, resumed, total = report.killed_run, report.resumed, report.config.episodes
    problems = []
    if not killed.killed or not 0 < len(killed.lines) < total:
        problems.append(f"the first judge run was not killed mid-way (killed={killed.killed}, "
                        f"{len(killed.lines)} of {total} rows written)")
    present = set(report.lines)
    lost = sorted(key for key, line in killed.lines.items() if line not in present)
    if lost:
        problems.append(f"result lines written before the kill are gone or changed: {lost[:5]} ({len(lost)})")
    rewritten = sorted(key for key, line in killed.lines.items() if _line_row(line) != report.rows.get(key))
    if rewritten:
        problems.append(f"ids judged before the kill were judged again: {rewritten[:5]} ({len(rewritten)})")
    if (resumed.total, resumed.skipped, resumed.judged) != (total, len(killed.lines), total - len(killed.lines)):
        problems.append(f"resumed run: total={resumed.total}, skipped={resumed.skipped}, judged={resumed.judged}; "
                        f"expected {total}, {len(killed.lines)}, {total - len(killed.lines)}")
    done = {_judge_fingerprint(e, report, 0) for e in report.episodes if e.id in killed.lines}
    todo = {_judge_fingerprint(e, report, 0) for e in report.episodes if e.id not in killed.lines}
    again = (done - todo) & {c.fingerprint for c in report.judge_calls}
    if again:
        problems.append(f"the resumed run sent {len(again)} judge request(s) for dialogues already judged")
    return problems


ALL_CHECKS: tuple[Check, ...] = (
    check_complete,
    check_scored_or_flagged,
    check_flagged_zero_advantage,
    check_retry_bounds,
    check_outcomes_match_injections,
    check_no_lost_results,
)


def run_checks(report: DrillReport) -> dict[str, list[str]]:
    """Every check's violations, by check name."""
    return {check.__name__: check(report) for check in ALL_CHECKS}


def _judge_fingerprint(episode: Any, report: DrillReport, round_: int) -> str:
    """The request fingerprint of judging ``episode`` in parse round ``round_`` (resumed run's seed)."""
    return fingerprint(JUDGE_MODEL, judge_messages(episode.record), report.config.seed + round_, 1)


def _by_fingerprint(injections: Sequence[Injection]) -> dict[str, list[Injection]]:
    groups: dict[str, list[Injection]] = defaultdict(list)
    for injection in injections:
        groups[injection.fingerprint].append(injection)
    return groups


def _line_row(line: str) -> dict[str, Any] | None:
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _line_id(line: str) -> str | None:
    row = _line_row(line)
    return str(row["id"]) if isinstance(row, dict) and "id" in row else None
