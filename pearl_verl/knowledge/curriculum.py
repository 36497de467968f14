"""The fixed knowledge-unit vocabulary and prerequisite rules (paper §3.1, "Knowledge Decomposition").

Every problem's knowledge units are drawn from one vocabulary, and the edges between them come from
one set of prerequisite rules, the same for every dataset. Both ship in
``pearl_verl/resources/knowledge_curriculum.json`` (documented in docs/simulator.md): 52 units from
place value to trigonometry, each with its grade band, prerequisites, the text cues that reveal it
in a problem, a solution or a tutor message, and the aliases an extractor may use for it.

An edge ``u -> v`` means *u is needed to apply v* (addition -> multiplication). The rules must form a
DAG; a curriculum file with a cycle is rejected when loaded, naming the cycle.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import networkx as nx

from pearl_verl.errors import InputError
from pearl_verl.jsonl import read_json

CURRICULUM_SCHEMA = "pearl_verl.knowledge/curriculum@1"
DEFAULT_CURRICULUM = "knowledge_curriculum.json"


@dataclass(frozen=True)
class KnowledgeUnit:
    """One unit of the vocabulary.

    Attributes:
        id: canonical snake_case id, e.g. ``percent_change``.
        name: human-readable name used in prompts.
        band: grade band (``K-2``, ``3-5``, ``6-8``, ``9-12``).
        description: one sentence for prompts and docs.
        prerequisites: ids of the units needed to apply this one (direct rules only).
        cues: case-insensitive regular expressions that reveal the unit in text.
        aliases: other names an extractor may use; matched after normalisation.
    """

    id: str
    name: str
    band: str
    description: str
    prerequisites: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    _patterns: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def mentioned_in(self, text: str) -> bool:
        """Whether any of the unit's cues occurs in ``text``."""
        return any(pattern.search(text) for pattern in self._patterns)


def normalise_name(text: str) -> str:
    """Lower-case, join words with ``_``, drop surrounding punctuation: ``"Unit-Rates "`` -> ``unit_rates``."""
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


class Curriculum:
    """The vocabulary and the prerequisite DAG over all of its units.

    Args:
        units: the units; ids must be unique and every prerequisite must name a unit.
        version: a version string, part of every decomposition's cache key.

    Raises:
        InputError: for duplicate ids, unknown prerequisites, invalid cue patterns, or a cycle.
    """

    def __init__(self, units: Iterable[KnowledgeUnit], version: str):
        self.version = version
        self.units: dict[str, KnowledgeUnit] = {}
        for unit in units:
            if unit.id in self.units:
                raise InputError(f"Curriculum unit id {unit.id!r} appears twice; ids must be unique.")
            self.units[unit.id] = unit
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(self.units)
        for unit in self.units.values():
            for prerequisite in unit.prerequisites:
                if prerequisite not in self.units:
                    raise InputError(
                        f"Unit {unit.id!r} lists unknown prerequisite {prerequisite!r}; add that unit or fix the id."
                    )
                self.graph.add_edge(prerequisite, unit.id)
        if not nx.is_directed_acyclic_graph(self.graph):
            cycle = " -> ".join(u for u, _ in nx.find_cycle(self.graph))
            raise InputError(f"Prerequisite rules contain a cycle ({cycle}); rules must form a DAG. Remove one edge.")
        self._names: dict[str, str] = {}
        for unit in self.units.values():
            for name in (unit.id, unit.name, *unit.aliases):
                self._names.setdefault(normalise_name(name), unit.id)
        self._closure = nx.transitive_closure_dag(self.graph)
        self._depth: dict[str, int] = {}
        for node in nx.topological_sort(self.graph):
            self._depth[node] = max((self._depth[p] + 1 for p in self.graph.predecessors(node)), default=0)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self.units)

    def normalise(self, name: str) -> str | None:
        """The canonical id for an extractor's unit name, or None when it names no unit.

        Matching, in order: the id, name or an alias after :func:`normalise_name`; the same with a
        trailing plural ``s`` removed or added; a close spelling (difflib ratio >= 0.88) of one of them.
        """
        key = normalise_name(name)
        if not key:
            return None
        for candidate in (key, key.rstrip("s"), key + "s"):
            if candidate in self._names:
                return self._names[candidate]
        close = difflib.get_close_matches(key, list(self._names), n=1, cutoff=0.88)
        return self._names[close[0]] if close else None

    def needs(self, prerequisite: str, unit: str) -> bool:
        """Whether ``prerequisite`` is needed (directly or through other units) to apply ``unit``."""
        return self._closure.has_edge(prerequisite, unit)

    def depth(self, unit: str) -> int:
        """Length of the longest prerequisite chain ending at ``unit`` (0 for a root such as place value)."""
        return self._depth[unit]

    def units_in(self, text: str) -> tuple[str, ...]:
        """Ids of all units whose cues occur in ``text``, in vocabulary order."""
        return tuple(uid for uid, unit in self.units.items() if unit.mentioned_in(text))

    def prompt_table(self) -> str:
        """One line per unit (``id: name - description``) for extraction prompts."""
        return "\n".join(f"{u.id}: {u.name} - {u.description}" for u in self.units.values())


def curriculum_from_dict(data: Mapping[str, Any]) -> Curriculum:
    """Build a :class:`Curriculum` from the JSON document format.

    Raises:
        InputError: for a wrong schema tag, a unit with missing or unknown fields, a bad regex, or
            any error of :class:`Curriculum`.
    """
    if data.get("schema") != CURRICULUM_SCHEMA:
        raise InputError(f"Curriculum schema {data.get('schema')!r} is not {CURRICULUM_SCHEMA!r}.")
    allowed = {"id", "name", "band", "description", "prerequisites", "cues", "aliases"}
    units = []
    for raw in data.get("units", []):
        unknown = set(raw) - allowed
        missing = {"id", "name", "band", "description"} - set(raw)
        if unknown or missing:
            raise InputError(
                f"Curriculum unit {raw.get('id')!r}: unknown fields {sorted(unknown)}, missing {sorted(missing)}."
            )
        try:
            patterns = tuple(re.compile(cue, re.IGNORECASE) for cue in raw.get("cues", ()))
        except re.error as exc:
            raise InputError(f"Curriculum unit {raw['id']!r} has an invalid cue regex: {exc}") from exc
        units.append(
            KnowledgeUnit(
                id=raw["id"],
                name=raw["name"],
                band=raw["band"],
                description=raw["description"],
                prerequisites=tuple(raw.get("prerequisites", ())),
                cues=tuple(raw.get("cues", ())),
                aliases=tuple(raw.get("aliases", ())),
                _patterns=patterns,
            )
        )
    if not units:
        raise InputError("Curriculum has no units.")
    return Curriculum(units, str(data.get("version", "")))


def load_curriculum(path: str | Path | None = None) -> Curriculum:
    """The shipped curriculum (``path`` None, cached) or one read from a JSON file."""
    if path is None:
        return _default_curriculum()
    return curriculum_from_dict(read_json(path, "curriculum file"))


@lru_cache(maxsize=1)
def _default_curriculum() -> Curriculum:
    text = resources.files("pearl_verl.resources").joinpath(DEFAULT_CURRICULUM).read_text(encoding="utf-8")
    return curriculum_from_dict(json.loads(text))
