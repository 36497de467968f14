"""Mastery state m^t over a problem's knowledge units: scale, initial sampling, update, invariant.

Scale: each unit's mastery is a number in [0, 1] (the probability-like strength with which the
student can apply it); prompts show it as a band: ``not yet`` (< 0.4), ``partial`` (< 0.7),
``mastered`` (>= 0.7).

Invariant (prerequisite order): for every edge u -> v of the problem's DAG, m_v <= m_u. A unit is
never mastered above what it builds on. Sampling, projection and the update all keep it; an
explicit initial state that breaks it is rejected (or, with ``strict_prerequisites=False``, kept as
stated, in which case the update never raises a unit above its prerequisites but does not lower it).

Initial state m^0 (seeded by the condition, the problem and the unit only, so a group shares it):
mean = 0.20 + 0.65 a - 0.03 depth(v), a = (profile total - 5) / 10, plus uniform noise of +-0.15,
clipped to [0.02, 0.98], then projected onto the invariant.

Update (paper Eq. 1, ``m^{t+1} = f_update(q, h, m^t, a^t, u^t)``, rule-based): a unit moves only if
the dialogue made it available: exposure e_v = 1 when the tutor's message a^t addresses it (its cues
or a reference step that applies it) and 0.5 when the student's own attempt u^t on a step applying
it was confirmed correct. In topological order,
``m'_v = max(m_v, min(m_v + eta(c) e_v (1 - m_v), min_{u->v} m'_u))`` with learning rate
``eta(c) = 0.10 + 0.05 (comprehension-1) + 0.03 (attention-1) + 0.02 (perseverance-1)``.
Mastery never decreases, and never rises above a prerequisite.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import networkx as nx

from pearl_verl.dialogue.student_contract import CognitiveProfile, StudentCondition
from pearl_verl.errors import InputError
from pearl_verl.knowledge.curriculum import Curriculum

MASTERY_BANDS: tuple[tuple[float, str], ...] = ((0.4, "not yet"), (0.7, "partial"), (float("inf"), "mastered"))


def mastery_band(value: float) -> str:
    """The named band of a mastery value."""
    return next(name for bound, name in MASTERY_BANDS if value < bound)


def ability_score(profile: CognitiveProfile) -> float:
    """The profile's aggregate (5-15) mapped to [0, 1]."""
    return (profile.total - 5) / 10


def sample_mastery(
    units: tuple[str, ...], curriculum: Curriculum, profile: CognitiveProfile, key: str
) -> dict[str, float]:
    """Unprojected initial mastery per unit, seeded by ``key`` and the unit id only."""
    mean = 0.20 + 0.65 * ability_score(profile)
    values = {}
    for unit in units:
        rng = random.Random(f"{key}|{unit}")
        value = mean - 0.03 * curriculum.depth(unit) + rng.uniform(-0.15, 0.15)
        values[unit] = round(min(0.98, max(0.02, value)), 3)
    return values


def project(graph: nx.DiGraph, mastery: Mapping[str, float], fixed: frozenset[str] = frozenset()) -> dict[str, float]:
    """Lower every unit not in ``fixed`` to at most the minimum of its prerequisites (topological order)."""
    result = dict(mastery)
    for node in nx.topological_sort(graph):
        if node in fixed:
            continue
        caps = [result[p] for p in graph.predecessors(node)]
        if caps:
            result[node] = min(result[node], min(caps))
    return result


def violations(graph: nx.DiGraph, mastery: Mapping[str, float], tol: float = 1e-9) -> list[tuple[str, str]]:
    """Edges ``(u, v)`` where the invariant m_v <= m_u is broken."""
    return [(u, v) for u, v in graph.edges if mastery[v] > mastery[u] + tol]


def initial_mastery(
    graph: nx.DiGraph,
    curriculum: Curriculum,
    condition: StudentCondition,
    key: str,
    strict: bool = True,
) -> dict[str, float]:
    """m^0 for the problem's units: the condition's explicit values, the rest sampled.

    Explicit values are kept. Sampled prerequisites of an explicit unit are raised to its value,
    then every sampled unit is lowered to its prerequisites (:func:`project`). Explicit values for
    curriculum units this problem does not use are ignored.

    Raises:
        InputError: for an explicit unit outside the curriculum or outside [0, 1]; with ``strict``,
            when explicit values themselves break the prerequisite order.
    """
    explicit = dict(condition.mastery or {})
    unknown = sorted(set(explicit) - set(curriculum.units))
    if unknown:
        raise InputError(
            f"StudentCondition.mastery names unknown unit(s) {unknown}; use curriculum ids (docs/simulator.md)."
        )
    bad = {u: v for u, v in explicit.items() if not (isinstance(v, int | float) and 0.0 <= v <= 1.0)}
    if bad:
        raise InputError(f"StudentCondition.mastery values {bad} must be numbers in [0, 1].")
    units = tuple(graph.nodes)
    fixed = frozenset(u for u in explicit if u in graph)
    mastery = sample_mastery(units, curriculum, condition.profile, key)
    mastery.update({u: float(explicit[u]) for u in fixed})
    for node in reversed(list(nx.topological_sort(graph))):
        if node not in fixed:
            lifts = [mastery[d] for d in nx.descendants(graph, node) if d in fixed]
            mastery[node] = max([mastery[node], *lifts])
    mastery = project(graph, mastery, fixed)
    broken = violations(graph, mastery)
    if strict and broken:
        detail = ", ".join(f"{u}={mastery[u]:.2f} -> {v}={mastery[v]:.2f}" for u, v in broken)
        raise InputError(
            f"Initial mastery breaks the prerequisite order ({detail}): a unit cannot exceed its prerequisites. "
            "Raise the prerequisite, lower the unit, or set strict_prerequisites=False to keep it as stated."
        )
    return mastery


def learning_rate(profile: CognitiveProfile) -> float:
    """eta(c) in [0.10, 0.30]: how much of the remaining gap one exposure closes."""
    return (
        0.10 + 0.05 * (profile.comprehension - 1) + 0.03 * (profile.attention - 1) + 0.02 * (profile.perseverance - 1)
    )


def update_mastery(
    graph: nx.DiGraph, mastery: Mapping[str, float], exposure: Mapping[str, float], rate: float
) -> dict[str, float]:
    """One application of the update rule (module docstring); pure, returns a new mapping.

    Args:
        graph: the problem's unit DAG.
        mastery: m^t for every node of ``graph``.
        exposure: e_v in [0, 1] per unit the turn made available (others count as 0).
        rate: eta(c).
    """
    result = dict(mastery)
    for node in nx.topological_sort(graph):
        current = mastery[node]
        gain = rate * min(1.0, max(0.0, exposure.get(node, 0.0))) * (1.0 - current)
        caps = [result[p] for p in graph.predecessors(node)]
        target = min([current + gain, *caps])
        result[node] = max(current, target)
    return result
