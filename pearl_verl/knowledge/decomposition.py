"""A problem's knowledge decomposition: its units, their prerequisite DAG, and its solution steps.

The graph has an edge ``u -> v`` between two of the problem's units when the curriculum's rules make
``u`` needed for ``v``, directly or through units the problem does not use; the transitive
reduction keeps only the direct links (``addition -> percent`` when the problem needs neither
multiplication nor fractions). Edges therefore never come from an extractor, and a graph can only
have a cycle if a stored decomposition was edited or corrupted; :func:`decomposition_from_dict`
rejects that.

Each reference-solution step records the units it applies and its result (the number after its
last ``=``), which the simulator uses to know what an attempt at that step should say.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from pearl_verl.dialogue.problem import Problem, solution_steps
from pearl_verl.errors import InputError
from pearl_verl.knowledge.curriculum import Curriculum

DECOMPOSITION_SCHEMA = "pearl_verl.knowledge/decomposition@1"
SOURCES: tuple[str, ...] = ("llm", "rules", "fallback")
"""How a decomposition was made: by the LLM extractor, by the rule extractor (offline backend), or
by the rule extractor after the LLM extractor failed (never cached, so a later run retries)."""

_RESULT = re.compile(r"=\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?)")


class DecompositionError(InputError):
    """A decomposition that cannot be used.

    Attributes:
        reason: ``malformed`` (not the JSON schema), ``unknown_unit`` (a unit outside the
            vocabulary), ``cycle`` (the unit graph is not a DAG) or ``mismatch`` (steps do not match
            the problem's solution).
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SolutionStep:
    """One step of the reference solution.

    Attributes:
        text: the step as written in the reference solution.
        units: ids of the knowledge units the step applies (a subset of the problem's units).
        result: the number the step computes (after its last ``=``), or None when it has none.
    """

    text: str
    units: tuple[str, ...]
    result: str | None = None


@dataclass(frozen=True)
class Decomposition:
    """The knowledge structure of one problem.

    Attributes:
        problem_id: the problem it was made for (a cached entry may serve equal content elsewhere).
        content_hash: :func:`content_hash` of the problem text, curriculum version and extractor.
        units: the problem's unit ids, in curriculum order.
        edges: prerequisite edges ``(u, v)`` among ``units`` (u needed to apply v).
        steps: the reference solution's steps with their units and results.
        source: one of :data:`SOURCES`.
        extractor: what produced it (``rules-v1``, ``llm:<model>:<prompt version>``).
        curriculum_version: the vocabulary version it refers to.
    """

    problem_id: str
    content_hash: str
    units: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    steps: tuple[SolutionStep, ...]
    source: str
    extractor: str
    curriculum_version: str

    def graph(self) -> nx.DiGraph:
        """The unit DAG (a new graph each call; callers may annotate it)."""
        graph = nx.DiGraph()
        graph.add_nodes_from(self.units)
        graph.add_edges_from(self.edges)
        return graph

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": DECOMPOSITION_SCHEMA,
            "problem_id": self.problem_id,
            "content_hash": self.content_hash,
            "units": list(self.units),
            "edges": [list(edge) for edge in self.edges],
            "steps": [{"text": s.text, "units": list(s.units), "result": s.result} for s in self.steps],
            "source": self.source,
            "extractor": self.extractor,
            "curriculum_version": self.curriculum_version,
        }


def content_hash(problem: Problem, curriculum: Curriculum, extractor: str) -> str:
    """sha256 over question, reference solution, curriculum version and extractor id.

    The problem id is left out on purpose: the same problem under two ids is decomposed once.
    """
    payload = json.dumps(
        [problem.question, problem.reference_solution, curriculum.version, extractor], ensure_ascii=True
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def reference_steps(problem: Problem) -> list[str]:
    """The reference solution's steps (lines, else sentences), as the scripted tutor splits them."""
    return solution_steps(problem.reference_solution) or [problem.question]


def step_result(step: str) -> str | None:
    """The number after the last ``=`` of a step (commas and spaces removed), or None."""
    matches = _RESULT.findall(step)
    return matches[-1].replace(",", "").replace(" ", "") if matches else None


def prerequisite_edges(units: Sequence[str], curriculum: Curriculum) -> tuple[tuple[str, str], ...]:
    """Edges among ``units``: the curriculum's transitive closure restricted to them, transitively reduced."""
    closure = nx.DiGraph()
    closure.add_nodes_from(units)
    closure.add_edges_from((u, v) for u in units for v in units if u != v and curriculum.needs(u, v))
    reduced = nx.transitive_reduction(closure)
    order = {unit: i for i, unit in enumerate(curriculum.ids)}
    return tuple(sorted(reduced.edges, key=lambda e: (order[e[0]], order[e[1]])))


def build_decomposition(
    problem: Problem,
    curriculum: Curriculum,
    step_units: Sequence[Iterable[str]],
    extra_units: Iterable[str],
    source: str,
    extractor: str,
) -> Decomposition:
    """Assemble a decomposition from per-step unit ids (already canonical) and problem-level units.

    The problem's units are the union of both, in curriculum order.

    Raises:
        DecompositionError: ``mismatch`` when ``step_units`` does not have one entry per
            reference step, ``unknown_unit`` for an id outside the vocabulary.
    """
    steps_text = reference_steps(problem)
    if len(step_units) != len(steps_text):
        raise DecompositionError(
            f"{len(step_units)} step unit lists for {len(steps_text)} reference steps of {problem.problem_id}.",
            "mismatch",
        )
    per_step = [tuple(dict.fromkeys(units)) for units in step_units]
    wanted = set(extra_units).union(*per_step)
    unknown = sorted(wanted - set(curriculum.units))
    if unknown:
        raise DecompositionError(
            f"Unknown knowledge unit(s) {unknown}; valid ids are in the curriculum.", "unknown_unit"
        )
    units = tuple(uid for uid in curriculum.ids if uid in wanted)
    order = {uid: i for i, uid in enumerate(units)}
    steps = tuple(
        SolutionStep(text, tuple(sorted(unit_ids, key=order.__getitem__)), step_result(text))
        for text, unit_ids in zip(steps_text, per_step)
    )
    return Decomposition(
        problem_id=problem.problem_id,
        content_hash=content_hash(problem, curriculum, extractor),
        units=units,
        edges=prerequisite_edges(units, curriculum),
        steps=steps,
        source=source,
        extractor=extractor,
        curriculum_version=curriculum.version,
    )


def decomposition_from_dict(data: Mapping[str, Any], curriculum: Curriculum) -> Decomposition:
    """Validate and load a stored decomposition (the cache format, see :mod:`pearl_verl.knowledge.cache`).

    Raises:
        DecompositionError: ``malformed`` for a wrong schema, field or type; ``unknown_unit`` for a
            unit outside ``curriculum`` or an edge/step naming a unit not in ``units``; ``cycle``
            when the edges contain a cycle (the cycle is named).
    """
    if not isinstance(data, Mapping) or data.get("schema") != DECOMPOSITION_SCHEMA:
        raise DecompositionError(f"Not a {DECOMPOSITION_SCHEMA} record.", "malformed")
    try:
        units = tuple(str(u) for u in data["units"])
        edges = tuple((str(u), str(v)) for u, v in data["edges"])
        steps = tuple(
            SolutionStep(
                str(s["text"]), tuple(str(u) for u in s["units"]), None if s["result"] is None else str(s["result"])
            )
            for s in data["steps"]
        )
        fields = {
            key: str(data[key]) for key in ("problem_id", "content_hash", "source", "extractor", "curriculum_version")
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise DecompositionError(f"Malformed decomposition record: {exc!r}.", "malformed") from exc
    if fields["source"] not in SOURCES:
        raise DecompositionError(f"source={fields['source']!r} is not one of {list(SOURCES)}.", "malformed")
    unknown = sorted(set(units) - set(curriculum.units))
    dangling = sorted(({u for edge in edges for u in edge} | {u for s in steps for u in s.units}) - set(units))
    if unknown or dangling:
        raise DecompositionError(
            f"Unknown units {unknown}; edges/steps naming units not listed: {dangling}.", "unknown_unit"
        )
    decomposition = Decomposition(units=units, edges=edges, steps=steps, **fields)
    graph = decomposition.graph()
    if not nx.is_directed_acyclic_graph(graph):
        cycle = " -> ".join(u for u, _ in nx.find_cycle(graph))
        raise DecompositionError(f"Decomposition of {fields['problem_id']} has a prerequisite cycle: {cycle}.", "cycle")
    return decomposition
