"""The fair-comparison protocol: matched items drawn once, stored, and reused by every tutor.

The paper evaluates every tutor "with matched problems, initial student profiles, mastery states,
simulator conditions, stopping criteria, and generation limits" (20 turns; temperature 1.0, top-p
1.0, top-k 50). Here an :class:`EvalItem` fixes the problem, the student condition (profile,
misconception, and the seed from which the simulator draws the initial mastery) and the episode
seed; :func:`draw_items` draws all of them once from the protocol seed, and the run's
``manifest.json`` stores them. A resumed run, or a tutor added to a run later, reads the items back
from the manifest instead of drawing again, so every tutor sees exactly the same triples.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, StudentCondition
from pearl_verl.errors import InputError, check_choices
from pearl_verl.llm.chat_types import SamplingConfig
from pearl_verl.ranges import POSITIVE, SEED, SHARE, Range, check_ranges
from pearl_verl.write_whole import write_whole

ABILITIES: tuple[str, ...] = ("balanced", *ABILITY_LEVELS, "all")
"""``balanced``: each item's ability level drawn uniformly; ``low``/``medium``/``high``: that band
only; ``all``: every problem once per band (the controllability protocol, three items per problem)."""

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class EvalProtocol:
    """Everything every tutor shares.

    Attributes:
        max_turns: tutor-turn limit.
        temperature: tutor sampling temperature.
        top_p: tutor nucleus sampling.
        top_k: tutor top-k; None leaves the server default.
        max_tokens: cap on one tutor message's tokens.
        seed: draws the items (profiles, misconception use, mastery seeds).
        ability: the students' ability level: ``balanced`` draws each item's level, ``all`` runs each
            problem once per level.
        misconception_rate: probability of starting from the source's misconception (MathDial).
    """

    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = {"ability": ABILITIES}
    RANGES: ClassVar[Mapping[str, Range]] = {
        "max_turns": POSITIVE,
        **{name: SamplingConfig.RANGES[name] for name in ("temperature", "top_p", "top_k", "max_tokens")},
        "seed": SEED,
        "misconception_rate": SHARE,
    }

    max_turns: int = 20
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = 50
    max_tokens: int | None = 8192
    seed: int = 0
    ability: str = "balanced"
    misconception_rate: float = 1.0

    def __post_init__(self) -> None:
        check_ranges(self)
        check_choices(self)
        self.sampling()
        ConditionSampler(misconception_rate=self.misconception_rate)

    def sampling(self) -> SamplingConfig:
        """The tutor sampling every evaluated tutor gets."""
        return SamplingConfig(
            temperature=self.temperature, top_p=self.top_p, top_k=self.top_k, max_tokens=self.max_tokens
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EvalItem:
    """One matched evaluation condition: the same for every tutor and simulator.

    Attributes:
        item_id: unique within a run (``<index>-<problem_id>``).
        problem: the problem.
        condition: the student's initial condition (profile, mastery seed, misconception).
        seed: the episode seed handed to the simulator's session.
    """

    item_id: str
    problem: Problem
    condition: StudentCondition
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "problem": self.problem.to_dict(),
            "condition": self.condition.to_dict(),
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalItem:
        return cls(
            str(data["item_id"]),
            Problem.from_dict(data["problem"]),
            StudentCondition.from_dict(data["condition"]),
            int(data["seed"]),
        )


@dataclass(frozen=True)
class SourceProblem:
    """A problem to evaluate on, with the misconception and fixed condition its source may carry."""

    problem: Problem
    misconception: str | None = None
    condition: StudentCondition | None = None


def load_eval_problems(paths: Sequence[str | Path], limit: int | None = None) -> list[SourceProblem]:
    """Problems from GSM8K / MATH / MathDial / Problem files, or prepared verl parquet files.

    A prepared parquet (``pearl-verl prepare-data``) already fixes each row's student condition;
    that condition is used as it is. Other files get conditions from :func:`draw_items`.

    Args:
        paths: ``.jsonl``, ``.json`` or ``.parquet`` files.
        limit: first N problems of each file.
    """
    from pearl_verl.data.problem_files import load_problems

    problems: list[SourceProblem] = []
    for path in paths:
        prepared = _prepared_parquet(Path(path), limit)
        if prepared is not None:
            problems += prepared
            continue
        problems += [SourceProblem(i.problem, i.misconception) for i in load_problems(path, limit)]
    if not problems:
        raise InputError(f"no problems in {[str(p) for p in paths]}.")
    return problems


def _prepared_parquet(path: Path, limit: int | None) -> list[SourceProblem] | None:
    if path.suffix != ".parquet":
        return None
    from pearl_verl.data.sources import read_parquet_rows
    from pearl_verl.dialogue.sample import EXTRA_INFO_KEY, PearlSample

    rows = read_parquet_rows(path)[:limit]
    if not rows or "prompt" not in rows[0] or not isinstance(rows[0].get("extra_info"), Mapping):
        return None
    if EXTRA_INFO_KEY not in rows[0]["extra_info"]:
        return None
    problems = []
    for number, row in enumerate(rows, start=1):
        try:
            sample = PearlSample.from_row(row["extra_info"], list(row["prompt"]))
        except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong type
            reason = str(exc) if isinstance(exc, InputError) else f"extra_info: {type(exc).__name__}: {exc}"
            raise InputError(f"{path}: row {number}: {reason}") from None
        problems.append(SourceProblem(sample.problem, sample.condition.misconception, sample.condition))
    return problems


def draw_items(problems: Sequence[SourceProblem], protocol: EvalProtocol) -> list[EvalItem]:
    """The matched items of a run, drawn once from ``protocol.seed``.

    Every item's condition comes from :class:`~pearl_verl.data.conditions.ConditionSampler`
    (profiles uniform within an ability band) unless its source fixed one; ``ability="all"``
    evaluates each problem once per band.
    """
    rng = random.Random(f"pearl-eval|{protocol.seed}")
    bands = ABILITY_LEVELS if protocol.ability == "all" else (protocol.ability,)
    items: list[EvalItem] = []
    for band in bands:
        mix = {level: 1 / 3 for level in ABILITY_LEVELS} if band == "balanced" else {band: 1.0}
        sampler = ConditionSampler(ability_mix=mix, misconception_rate=protocol.misconception_rate)
        for source in problems:
            condition = source.condition or sampler.sample(rng, source.misconception)
            item_id = f"{len(items):05d}-{source.problem.problem_id}"
            items.append(EvalItem(item_id, source.problem, condition, condition.seed))
    return items


@dataclass(frozen=True)
class Manifest:
    """What a run directory's ``manifest.json`` holds.

    Attributes:
        protocol: the shared protocol.
        items: the matched items, in order.
        setup: what must not change within a run: the student and judge settings (no keys).
        tutors: every tutor evaluated so far and how (tutors may be added to a run later).
        simulators: every simulator evaluated so far.
    """

    protocol: EvalProtocol
    items: tuple[EvalItem, ...]
    setup: Mapping[str, Any]
    tutors: Mapping[str, Any]
    simulators: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "protocol": self.protocol.to_dict(),
            "setup": dict(self.setup),
            "tutors": dict(self.tutors),
            "simulators": list(self.simulators),
            "items": [item.to_dict() for item in self.items],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        if data.get("version") != MANIFEST_VERSION:
            raise InputError(f"manifest version {data.get('version')!r} is not {MANIFEST_VERSION}.")
        return cls(
            EvalProtocol(**data["protocol"]),
            tuple(EvalItem.from_dict(i) for i in data["items"]),
            dict(data["setup"]),
            dict(data["tutors"]),
            tuple(data["simulators"]),
        )


def read_manifest(folder: Path) -> Manifest | None:
    """The run's manifest, or None for a new run directory."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    return Manifest.from_dict(json.loads(path.read_text(encoding="utf-8")))


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (a kill never leaves half a manifest)."""
    write_whole(folder / MANIFEST, json.dumps(manifest.to_dict(), indent=1, ensure_ascii=False))


def resolve_manifest(folder: Path, fresh: Manifest) -> Manifest:
    """The manifest to run with: ``fresh`` for a new directory, else the stored one extended.

    A stored run keeps its items; its protocol, items and setup must equal the fresh ones (the
    same problems, seed and settings were given), so results never mix conditions. New tutors and
    simulators are added.

    Raises:
        InputError: naming what differs, when the directory holds a run with other settings.
    """
    stored = read_manifest(folder)
    if stored is None:
        return fresh
    where = folder / MANIFEST
    if stored.protocol != fresh.protocol:
        raise InputError(
            f"{where} was run with protocol {stored.protocol.to_dict()}, not {fresh.protocol.to_dict()}; "
            "results with different protocols cannot share a table. Use a new --out directory."
        )
    if [i.to_dict() for i in stored.items] != [i.to_dict() for i in fresh.items]:
        raise InputError(
            f"{where} holds {len(stored.items)} items drawn from other problems (or limits) than the "
            f"{len(fresh.items)} given now; pass the same problem files and --limit, or use a new --out directory."
        )
    if dict(stored.setup) != dict(fresh.setup):
        raise InputError(
            f"{where} was run with settings {dict(stored.setup)}, not {dict(fresh.setup)} (student or judge "
            "changed); use a new --out directory."
        )
    for name, described in fresh.tutors.items():
        if name in stored.tutors and stored.tutors[name] != described:
            raise InputError(
                f"{where} already has a tutor named {name!r} run as {stored.tutors[name]}; give the new one "
                "another name."
            )
    tutors = {**stored.tutors, **fresh.tutors}
    simulators = tuple(dict.fromkeys((*stored.simulators, *fresh.simulators)))
    return Manifest(stored.protocol, stored.items, stored.setup, tutors, simulators)
