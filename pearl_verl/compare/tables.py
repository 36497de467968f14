"""The study's tables: Win/Tie/Loss/Preference per tutor pair, agreement, and the eval-rm export.

The paper reports, per compared tutor, Win / Tie / Loss (percent of comparisons) and
``Preference = Win + 0.5 x Tie``, above 50% favouring the focal tutor. A comparison is, with
``unit="vote"``, every annotator's vote (the default: nothing is thrown away), or with
``unit="majority"``, one per pair: the outcome a strict majority of its annotators chose (pairs
without one are counted as unresolved and left out; the paper resolved those by discussion).

The Preference interval is the Student-t interval (:func:`pearl_verl.stats.mean_ci`) of the
per-comparison score (win 1, tie 0.5, loss 0), clipped to [0, 100]. Two votes on one pair are not independent, so with
``unit="vote"`` it is somewhat narrow; ``unit="majority"`` has one comparison per pair.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from pearl_verl.compare.agreement import cohen_kappa, fleiss_kappa
from pearl_verl.compare.pairs import ComparisonPair
from pearl_verl.compare.vote import Vote
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError
from pearl_verl.stats import Estimate, mean_ci, wilson_ci

UNITS: tuple[str, ...] = ("vote", "majority")
EXPORT_UNITS: tuple[str, ...] = ("majority", "annotator")
_SCORE = {"win": 1.0, "tie": 0.5, "loss": 0.0}


@dataclass(frozen=True)
class Comparison:
    """One counted comparison, oriented: ``outcome`` is ``win`` / ``tie`` / ``loss`` for ``focal``."""

    pair_id: str
    focal: str
    compared: str
    outcome: str


def _orient(pair_id: str, tutor_a: str, tutor_b: str, outcome: str, focal: str | None) -> Comparison:
    """An outcome in real terms (a / tie / b) as seen from ``focal`` (tutor_a unless focal is tutor_b)."""
    result = {"a": "win", "tie": "tie", "b": "loss"}[outcome]
    if focal is not None and focal == tutor_b:
        return Comparison(pair_id, tutor_b, tutor_a, {"win": "loss", "tie": "tie", "loss": "win"}[result])
    return Comparison(pair_id, tutor_a, tutor_b, result)


def majority(outcomes: Sequence[str]) -> str | None:
    """The outcome more than half of ``outcomes`` agree on, or None."""
    if not outcomes:
        return None
    top, count = Counter(outcomes).most_common(1)[0]
    return top if count * 2 > len(outcomes) else None


def _by_pair(votes: Sequence[Vote]) -> dict[str, list[Vote]]:
    grouped: dict[str, list[Vote]] = {}
    for vote in votes:
        grouped.setdefault(vote.pair_id, []).append(vote)
    return grouped


def comparisons(votes: Sequence[Vote], unit: str = "vote", focal: str | None = None) -> tuple[list[Comparison], int]:
    """The counted comparisons, and how many pairs had no majority (``unit="majority"`` only).

    Raises:
        InputError: for an unknown ``unit``.
    """
    if unit not in UNITS:
        raise InputError(f"unit={unit!r} must be one of {list(UNITS)}.")
    if unit == "vote":
        return [_orient(v.pair_id, v.tutor_a, v.tutor_b, v.outcome, focal) for v in votes], 0
    counted, unresolved = [], 0
    for pair_id, mine in _by_pair(votes).items():
        outcome = majority([v.outcome for v in mine])
        if outcome is None:
            unresolved += 1
        else:
            counted.append(_orient(pair_id, mine[0].tutor_a, mine[0].tutor_b, outcome, focal))
    return counted, unresolved


@dataclass(frozen=True)
class PreferenceRow:
    """One row of the paper's table: the focal tutor against one compared tutor.

    Attributes:
        focal: the tutor Win counts for.
        compared: the other tutor.
        win: focal preferred (percent of comparisons).
        tie: neither (percent).
        loss: compared preferred (percent).
        preference: Win + 0.5 x Tie (percent) with its 95% interval.
        counts: comparisons per outcome.
        pairs: distinct pairs behind the row.
    """

    focal: str
    compared: str
    win: float
    tie: float
    loss: float
    preference: Estimate
    counts: Mapping[str, int]
    pairs: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "focal": self.focal,
            "compared": self.compared,
            "win": self.win,
            "tie": self.tie,
            "loss": self.loss,
            "preference": self.preference.to_dict(),
            "counts": dict(self.counts),
            "n": self.preference.n,
            "pairs": self.pairs,
        }


def preference_rows(counted: Sequence[Comparison]) -> list[PreferenceRow]:
    """One row per (focal, compared), in order of first appearance."""
    groups: dict[tuple[str, str], list[Comparison]] = {}
    for c in counted:
        groups.setdefault((c.focal, c.compared), []).append(c)
    rows = []
    for (focal, compared), mine in groups.items():
        counts = Counter(c.outcome for c in mine)
        n = len(mine)
        win, tie, loss = (100 * counts[k] / n for k in ("win", "tie", "loss"))
        estimate = mean_ci([_SCORE[c.outcome] for c in mine]).scaled(100)
        # Preference is defined as Win + 0.5 x Tie (the interval's centre); the score is bounded, so is the interval
        preference = Estimate(win + 0.5 * tie, max(0.0, estimate.low), min(100.0, estimate.high), n)
        full = {k: counts[k] for k in ("win", "tie", "loss")}
        rows.append(PreferenceRow(focal, compared, win, tie, loss, preference, full, len({c.pair_id for c in mine})))
    return rows


def annotator_agreement(votes: Sequence[Vote]) -> dict[str, Any]:
    """Cohen's kappa per two annotators over the pairs both voted on; Fleiss' kappa over all of them.

    Labels are real outcomes (``a`` / ``tie`` / ``b``), so the displayed order does not matter.
    """
    by_annotator: dict[str, dict[str, str]] = {}
    for v in votes:
        by_annotator.setdefault(v.annotator, {})[v.pair_id] = v.outcome
    pairwise = []
    for first, second in combinations(by_annotator, 2):
        shared = sorted(set(by_annotator[first]) & set(by_annotator[second]))
        if not shared:
            continue
        x = [by_annotator[first][p] for p in shared]
        y = [by_annotator[second][p] for p in shared]
        pairwise.append(
            {
                "annotators": [first, second],
                "pairs": len(shared),
                "agreement": sum(i == j for i, j in zip(x, y)) / len(shared),
                "cohen_kappa": cohen_kappa(x, y),
            }
        )
    result: dict[str, Any] = {"pairwise": pairwise, "fleiss_kappa": None, "fleiss_pairs": 0}
    items = [Counter(v.outcome for v in mine) for mine in _by_pair(votes).values()]
    multi = [item for item in items if sum(item.values()) >= 2]
    if len(by_annotator) > 2 and multi:
        result["fleiss_kappa"] = fleiss_kappa(multi)
        result["fleiss_pairs"] = len(multi)
    return result


def dimension_rows(votes: Sequence[Vote], focal: str | None = None) -> list[dict[str, Any]]:
    """Per tutor pair and dimension: the optional per-dimension choices as Win/Tie/Loss counts and Preference."""
    table: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for v in votes:
        for dim, outcome in v.dims.items():
            c = _orient(v.pair_id, v.tutor_a, v.tutor_b, outcome, focal)
            table.setdefault((c.focal, c.compared), {d: Counter() for d in DIMENSIONS})[dim][c.outcome] += 1
    rows = []
    for (focal_name, compared), dims in table.items():
        for dim in DIMENSIONS:
            n = sum(dims[dim].values())
            preference = 100 * (dims[dim]["win"] + 0.5 * dims[dim]["tie"]) / n if n else None
            counts = {k: dims[dim][k] for k in ("win", "tie", "loss")}
            rows.append(
                {"focal": focal_name, "compared": compared, "dim": dim, **counts, "n": n, "preference": preference}
            )
    return rows


def position_bias(votes: Sequence[Vote]) -> Estimate | None:
    """Share of decided votes (not ties) that chose the dialogue shown on the left, with a Wilson interval."""
    decided = [v for v in votes if v.outcome != "tie"]
    if not decided:
        return None
    return wilson_ci(sum(v.outcome == v.left_side for v in decided), len(decided))


def export_rows(
    votes: Sequence[Vote], pairs: Sequence[ComparisonPair], per: str = "majority"
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """eval-rm preference pairs (``pearl_verl.eval.rm.read_pairs`` format) from the teachers' votes.

    ``per="majority"``: one line per pair with a strict-majority decided outcome (id = pair id);
    ``per="annotator"``: one line per decided vote (id = ``<pair id>|<annotator>``). eval-rm needs a
    side and a margin, so ties, pairs without a majority and pairs without a margin bucket are left
    out and counted by reason.

    Raises:
        InputError: for an unknown ``per``, or a vote on a pair not in ``pairs``.
    """
    from pearl_verl.eval.rm import PreferencePair

    if per not in EXPORT_UNITS:
        raise InputError(f"export unit {per!r} must be one of {list(EXPORT_UNITS)}.")
    by_id = {p.pair_id: p for p in pairs}
    skipped: Counter[str] = Counter()
    rows = []
    for pair_id, mine in _by_pair(votes).items():
        if pair_id not in by_id:
            raise InputError(f"vote on pair {pair_id!r}, which the study does not hold.")
        pair = by_id[pair_id]
        if per == "majority":
            decided = [(pair_id, majority([v.outcome for v in mine]))]
        else:
            decided = [(f"{pair_id}|{v.annotator}", v.outcome) for v in mine]
        for row_id, outcome in decided:
            reason = "no majority" if outcome is None else "tie" if outcome == "tie" else None
            reason = reason or ("no margin bucket" if pair.margin is None else None)
            if reason is not None:
                skipped[reason] += 1
                continue
            rows.append(PreferencePair(row_id, pair.a, pair.b, str(outcome), str(pair.margin)).to_dict())
    return rows, skipped


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _kappa(value: float | None) -> str:
    return "undefined (one label only)" if value is None else f"{value:.3f}"


def preference_markdown(rows: Sequence[PreferenceRow]) -> str:
    """The paper's table (Compared Tutor, Win, Tie, Loss, Preference), one per focal tutor."""
    parts = []
    for focal in dict.fromkeys(r.focal for r in rows):
        parts += [
            f"## {focal} against the compared tutors",
            "",
            "| Compared Tutor | Win | Tie | Loss | Preference | 95% CI | n | pairs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in (r for r in rows if r.focal == focal):
            interval = f"[{r.preference.low:.2f}, {r.preference.high:.2f}]" if r.preference.n > 1 else "—"
            parts.append(
                f"| {r.compared} | {_pct(r.win)} | {_pct(r.tie)} | {_pct(r.loss)} | {_pct(r.preference.mean)} "
                f"| {interval} | {r.preference.n} | {r.pairs} |"
            )
        parts.append("")
    return "\n".join(parts)


def agreement_markdown(result: Mapping[str, Any]) -> str:
    """Inter-annotator agreement: Cohen's kappa per two annotators, then Fleiss' kappa."""
    lines = [
        "## Inter-annotator agreement",
        "",
        "| Annotators | Shared pairs | Raw agreement | Cohen's kappa |",
        "|---|---|---|---|",
    ]
    for row in result["pairwise"]:
        lines.append(
            f"| {' / '.join(row['annotators'])} | {row['pairs']} | {100 * row['agreement']:.2f}% "
            f"| {_kappa(row['cohen_kappa'])} |"
        )
    if not result["pairwise"]:
        lines.append("| — | 0 | — | — |")
    if result["fleiss_pairs"]:
        lines += ["", f"Fleiss' kappa over {result['fleiss_pairs']} pairs: {_kappa(result['fleiss_kappa'])}."]
    return "\n".join(lines) + "\n"


def dimension_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """Preference per dimension from the optional per-dimension choices."""
    from pearl_verl.judge.rubric import DIMENSION_TITLES

    lines = [
        "## Per-dimension preference (optional choices)",
        "",
        "| Tutor | Compared Tutor | Dimension | Win | Tie | Loss | Preference | n |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["n"]:
            lines.append(
                f"| {r['focal']} | {r['compared']} | {DIMENSION_TITLES[r['dim']]} | {r['win']} | {r['tie']} "
                f"| {r['loss']} | {_pct(r['preference'])} | {r['n']} |"
            )
    return "\n".join(lines) + "\n"


def build_report(votes: Sequence[Vote], unit: str = "vote", focal: str | None = None) -> tuple[str, dict[str, Any]]:
    """The Markdown report and its JSON summary.

    Raises:
        InputError: for an unknown ``unit`` or no votes.
    """
    if not votes:
        raise InputError("the study holds no votes yet; nothing to report.")
    counted, unresolved = comparisons(votes, unit, focal)
    rows = preference_rows(counted)
    agreement = annotator_agreement(votes)
    dims = dimension_rows(votes, focal)
    bias = position_bias(votes)
    annotators = sorted({v.annotator for v in votes})
    what = "every annotator's vote" if unit == "vote" else "one majority outcome per pair"
    parts = [
        "# Blind pairwise comparison by teachers",
        "",
        f"{len(votes)} votes by {len(annotators)} annotators on {len({v.pair_id for v in votes})} pairs; "
        f"a comparison is {what}"
        + (f" ({unresolved} pairs without a majority left out)" if unit == "majority" else "")
        + ". Win / Tie / Loss are percent of comparisons for the tutor named in the heading; "
        "Preference = Win + 0.5 x Tie (above 50 favours it), with a 95% Student-t interval.",
        "",
        preference_markdown(rows),
        agreement_markdown(agreement),
    ]
    if bias is not None:
        parts.append(
            f"Position check: {100 * bias.mean:.1f}% of decided votes chose the dialogue shown first "
            f"(95% CI {100 * bias.low:.1f}-{100 * bias.high:.1f}, n={bias.n}); orders are counterbalanced.\n"
        )
    if any(r["n"] for r in dims):
        parts.append(dimension_markdown(dims))
    summary = {
        "unit": unit,
        "focal": focal,
        "votes": len(votes),
        "annotators": annotators,
        "unresolved_pairs": unresolved,
        "table": [r.to_dict() for r in rows],
        "agreement": agreement,
        "dimensions": dims,
        "left_chosen": bias.to_dict() if bias is not None else None,
    }
    return "\n".join(parts), summary
