"""Comparison pairs: the same matched item tutored by two tutors, built from eval-tutor results.

A pair is one JSON line of the file ``compare build-pairs`` writes::

    {"pair_id": "<simulator>|<item_id>|<tutor_a>-vs-<tutor_b>", "simulator", "item_id",
     "tutor_a", "tutor_b", "a": EpisodeRecord, "b": EpisodeRecord,
     "score_a": float | null, "score_b": float | null, "margin": "low" | "medium" | "high" | null}

``score_*`` are the run judge's 8-dimension averages on the 0-100 scale and ``margin`` buckets
``|score_a - score_b|`` with the same names eval-rm uses (:data:`pearl_verl.eval.rm.MARGINS`); both
are null when the run had no judge or the judge failed on either dialogue. ``tutor_a`` is the
focal tutor of the paper's table (PEARL): the report's Win means "a preferred".

The ids and tutor names stay in this file and the database; the web app never shows them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.errors import InputError
from pearl_verl.eval.rm import MARGINS
from pearl_verl.jsonl import read_unique_records
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS
from pearl_verl.row_kinds import stamped
from pearl_verl.write_whole import write_whole

"""Dialogues cut short by a backend failure say nothing about the tutor; they are never paired."""

DEFAULT_MARGIN_EDGES: tuple[float, float] = (5.0, 15.0)
"""Score-gap edges (0-100) between low/medium and medium/high, as ``eval-rm --make-pairs`` uses."""


@dataclass(frozen=True)
class ComparisonPair:
    """Two dialogues of the same problem, student condition and simulator, by two tutors.

    Attributes:
        pair_id: unique in a study (``<simulator>|<item_id>|<tutor_a>-vs-<tutor_b>``).
        simulator: the student simulator both dialogues ran against.
        item_id: the eval-tutor matched item.
        tutor_a: the focal tutor (the side the report's Win counts for).
        tutor_b: the compared tutor.
        a: tutor_a's dialogue.
        b: tutor_b's dialogue.
        score_a: the run judge's 0-100 average of ``a``, or None.
        score_b: the same for ``b``.
        margin: the bucket of ``|score_a - score_b|`` (one of ``MARGINS``), or None without scores.
    """

    pair_id: str
    simulator: str
    item_id: str
    tutor_a: str
    tutor_b: str
    a: EpisodeRecord
    b: EpisodeRecord
    score_a: float | None = None
    score_b: float | None = None
    margin: str | None = None

    def __post_init__(self) -> None:
        if self.tutor_a == self.tutor_b:
            raise InputError(f"pair {self.pair_id}: tutor_a and tutor_b are both {self.tutor_a!r}.")
        if self.a.problem != self.b.problem or self.a.condition != self.b.condition:
            raise InputError(
                f"pair {self.pair_id}: both dialogues must tutor the same problem for the same student condition "
                f"(got {self.a.problem.problem_id!r} vs {self.b.problem.problem_id!r})."
            )
        if self.margin is not None and self.margin not in MARGINS:
            raise InputError(f"pair {self.pair_id}: margin={self.margin!r} must be one of {list(MARGINS)} or null.")

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair_id": self.pair_id,
            "simulator": self.simulator,
            "item_id": self.item_id,
            "tutor_a": self.tutor_a,
            "tutor_b": self.tutor_b,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "score_a": self.score_a,
            "score_b": self.score_b,
            "margin": self.margin,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonPair:
        return cls(
            str(data["pair_id"]),
            str(data["simulator"]),
            str(data["item_id"]),
            str(data["tutor_a"]),
            str(data["tutor_b"]),
            EpisodeRecord.from_dict(data["a"]),
            EpisodeRecord.from_dict(data["b"]),
            None if data.get("score_a") is None else float(data["score_a"]),
            None if data.get("score_b") is None else float(data["score_b"]),
            data.get("margin"),
        )


def margin_bucket(gap: float, edges: tuple[float, float] = DEFAULT_MARGIN_EDGES) -> str:
    """``low`` below ``edges[0]``, ``medium`` below ``edges[1]``, else ``high`` (``gap`` on 0-100).

    Raises:
        InputError: for edges that are not ``0 <= low <= medium``.
    """
    low, medium = edges
    if not 0 <= low <= medium:
        raise InputError(f"margin edges {edges} must satisfy 0 <= low <= medium (0-100 scale).")
    gap = abs(gap)
    return MARGINS[0] if gap < low else MARGINS[1] if gap < medium else MARGINS[2]


def usable(row: Mapping[str, Any]) -> bool:
    """Whether a result line holds a dialogue worth showing teachers (the judge may have failed)."""
    episode = row.get("episode")
    return episode is not None and not row.get("error") and episode.get("end_reason") not in FAILED_EPISODE_REASONS


def _score(row: Mapping[str, Any]) -> float | None:
    from pearl_verl.eval.tables import dialogue_avg, judged

    return 100 * dialogue_avg(row["judge"]) if judged(row) else None


def tutor_pairs(
    tutors: Sequence[str], focal: str | None = None, explicit: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """Which (tutor_a, tutor_b) to compare: ``explicit``, else ``focal`` against each other, else all.

    Raises:
        InputError: naming a tutor that is not in ``tutors``.
    """
    for name in [focal, *(t for pair in explicit for t in pair)]:
        if name is not None and name not in tutors:
            raise InputError(f"tutor {name!r} is not in the results; they hold {list(tutors)}.")
    if explicit:
        return list(dict.fromkeys(explicit))
    if focal is not None:
        return [(focal, other) for other in tutors if other != focal]
    return list(combinations(tutors, 2))


@dataclass(frozen=True)
class BuildSummary:
    """What :func:`build_pairs` made and left out.

    Attributes:
        pairs: the pairs built (after sampling).
        candidates: pairs available before sampling.
        missing: (item, tutor pair) combinations left out because a dialogue was absent or failed.
    """

    pairs: list[ComparisonPair]
    candidates: int
    missing: int


def build_pairs(
    rows: Iterable[Mapping[str, Any]],
    tutors: Sequence[tuple[str, str]],
    edges: tuple[float, float] | None = DEFAULT_MARGIN_EDGES,
    sample: int | None = None,
    seed: int = 0,
) -> BuildSummary:
    """Pairs of the same (simulator, item) under each tutor pair in ``tutors``.

    Args:
        rows: eval-tutor result lines (deduplicated, e.g. ``read_results(...).values()``).
        tutors: (tutor_a, tutor_b) combinations (:func:`tutor_pairs`).
        edges: margin edges; None leaves every margin out.
        sample: keep a random ``sample`` of the pairs (the paper's "300 randomly sampled pairs").
        seed: draws the sample.

    Raises:
        InputError: when two dialogues of one item differ in problem or condition (the row ids are
            named), or ``sample < 1``.
    """
    if sample is not None and sample < 1:
        raise InputError(f"sample={sample} must be >= 1.")
    by_item: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        if usable(row):
            by_item.setdefault((str(row["simulator"]), str(row["item_id"])), {})[str(row["tutor"])] = row
    pairs: list[ComparisonPair] = []
    missing = 0
    for (simulator, item_id), mine in sorted(by_item.items()):
        for tutor_a, tutor_b in tutors:
            if tutor_a not in mine or tutor_b not in mine:
                missing += 1
                continue
            pairs.append(_pair(simulator, item_id, tutor_a, tutor_b, mine[tutor_a], mine[tutor_b], edges))
    candidates = len(pairs)
    if sample is not None and sample < len(pairs):
        keep = set(random.Random(f"pearl-compare|{seed}").sample(range(len(pairs)), sample))
        pairs = [p for i, p in enumerate(pairs) if i in keep]
    return BuildSummary(pairs, candidates, missing)


def _pair(
    simulator: str,
    item_id: str,
    tutor_a: str,
    tutor_b: str,
    row_a: Mapping[str, Any],
    row_b: Mapping[str, Any],
    edges: tuple[float, float] | None,
) -> ComparisonPair:
    pair_id = f"{simulator}|{item_id}|{tutor_a}-vs-{tutor_b}"
    try:
        a, b = EpisodeRecord.from_dict(row_a["episode"]), EpisodeRecord.from_dict(row_b["episode"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"result {row_a.get('id')!r} or {row_b.get('id')!r} holds no valid episode: {exc}") from exc
    if a.problem != b.problem or a.condition != b.condition:
        raise InputError(
            f"results {row_a.get('id')!r} and {row_b.get('id')!r} share item {item_id!r} but not its problem and "
            "student condition (runs with different problem files mixed?); pair runs of one eval-tutor manifest."
        )
    score_a, score_b = _score(row_a), _score(row_b)
    scored = score_a is not None and score_b is not None and edges is not None
    margin = margin_bucket(score_a - score_b, edges) if scored else None  # type: ignore[operator, arg-type]
    return ComparisonPair(pair_id, simulator, item_id, tutor_a, tutor_b, a, b, score_a, score_b, margin)


def write_pairs(path: Path, pairs: Sequence[ComparisonPair]) -> None:
    """Write pairs as JSONL (atomically: a kill never leaves half a file)."""
    write_whole(path, (json.dumps(stamped("comparison_pair", pair.to_dict()), ensure_ascii=False) + "\n"
                       for pair in pairs))


def read_pairs(path: Path) -> list[ComparisonPair]:
    """Every pair of a ``build-pairs`` file.

    Raises:
        InputError: for a malformed line or a repeated pair id (file and line are named).
    """
    return read_unique_records(
        path, lambda data, _: ComparisonPair.from_dict(data), lambda p: p.pair_id, "comparison pair", "pair id"
    )


def read_runs(paths: Sequence[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """Result lines of eval-tutor runs (directories or ``results.jsonl`` files) and their tutor order.

    The tutor order is the manifest's (the order the run was given tutors in) when a directory has
    one, then any other tutor in order of first appearance.

    Raises:
        InputError: for a path without results, or one result id holding different lines in two runs.
    """
    from pearl_verl.eval.protocol import read_manifest
    from pearl_verl.eval.runner import RESULTS, read_tutor_results

    rows: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    tutors: list[str] = []
    for path in paths:
        results = path / RESULTS if path.is_dir() else path
        if path.is_dir() and not results.is_file():
            raise InputError(f"{path}: not an eval-tutor run directory (it has no {RESULTS}).")
        if path.is_dir() and (manifest := read_manifest(path)) is not None:
            tutors += list(manifest.tutors)
        for key, row in read_tutor_results(results).items():
            if key in rows and rows[key] != row:
                raise InputError(f"result {key!r} differs between {where[key]} and {results}; pass one of them.")
            rows[key], where[key] = row, results
            tutors.append(str(row["tutor"]))
    if not rows:
        raise InputError(f"no eval-tutor results in {[str(p) for p in paths]}.")
    return list(rows.values()), list(dict.fromkeys(tutors))
