"""Problem sources -> verl parquet rows for the ``pearl_tutor`` agent loop (``pearl-verl prepare-data``).

Row contract (parsed back by :meth:`pearl_verl.dialogue.sample.PearlSample.from_row` in the agent loop)::

    data_source   gsm8k | math | mathdial
    agent_name    "pearl_tutor"  (verl routes the row to our agent loop)
    prompt        [{"role": "user", "content": <the student's opening message>}]
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": <normalised final answer>}
    extra_info    {"index": <row in its file>, "split": "train" | "val",
                   "pearl": <JSON string: the problem and the student's initial condition>}

The opening is the PEARL simulator's deterministic ``opening(problem, condition)``, so the prompt a
group shares is fixed by the row. The pipeline, in order:

1. read every source (:func:`pearl_verl.data.sources.load_source`), malformed rows located by file,
   line and field (fatal unless ``skip_errors``, then counted);
2. check that each final answer parses with math-verify and matches itself; failures are reported
   with their row (and dropped with ``drop_unparsed_answers``);
3. assign the split: a source marked ``train`` or ``val`` goes there whole; an ``auto`` source
   sends a question to validation when a hash of its normalised text falls under
   ``val_fraction``, so a question lands in the same split on every run and with every mix of
   sources, and all rows of one question (MathDial repeats questions) share it;
4. deduplicate (``dedup``): a repeated (question, misconception) pair keeps its first row, and a
   training question that also appears in validation leaves training;
5. draw ``conditions_per_problem`` student conditions per problem with the
   :class:`~pearl_verl.data.conditions.ConditionSampler`, each from its own RNG seeded by
   ``(seed, problem id, k)``, so a row's condition does not depend on the other rows.
"""

from __future__ import annotations

import logging
import random
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.sources import READERS, SourceItem, load_source
from pearl_verl.dialogue.answers import answers_match
from pearl_verl.dialogue.problem import Problem
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, StudentCondition
from pearl_verl.errors import InputError
from pearl_verl.ranges import POSITIVE, SEED, Range, check_ranges

logger = logging.getLogger(__name__)

AGENT_NAME = "pearl_tutor"
"""verl's ``agent_name`` column value; equals ``pearl_verl.verl_plugin.agent_loop.AGENT_NAME``."""
SPLITS: tuple[str, ...] = ("train", "val")
SPLIT_CHOICES: tuple[str, ...] = (*SPLITS, "auto")

Opening = Callable[[Problem, StudentCondition], str]


@dataclass(frozen=True)
class SourceSpec:
    """One source on the command line: ``KIND[:SPLIT]=PATH``.

    Attributes:
        kind: ``gsm8k``, ``math`` or ``mathdial``.
        location: a local file, ``hf:<dataset>[:<config>]@<split>`` or ``@fixture``.
        split: ``train``, ``val`` or ``auto`` (hash split by question, see the module docstring).
    """

    kind: str
    location: str
    split: str = "auto"

    def __post_init__(self) -> None:
        if self.kind not in READERS:
            raise InputError(f"source kind {self.kind!r} must be one of {sorted(READERS)} (in {self}).")
        if self.split not in SPLIT_CHOICES:
            raise InputError(f"source split {self.split!r} must be one of {list(SPLIT_CHOICES)} (in {self}).")
        if not self.location:
            raise InputError(f"source {self.kind} has an empty path.")

    def __str__(self) -> str:
        return f"{self.kind}:{self.split}={self.location}"

    @classmethod
    def parse(cls, text: str) -> SourceSpec:
        """``KIND[:SPLIT]=PATH``, e.g. ``gsm8k:val=test.jsonl`` or ``math=hf:HuggingFaceH4/MATH-500@test``.

        Raises:
            InputError: naming the expected form.
        """
        head, sep, location = text.partition("=")
        if not sep or not head or not location:
            raise InputError(
                f"source {text!r} must look like KIND[:SPLIT]=PATH, e.g. gsm8k=train.jsonl, gsm8k:val=test.jsonl, "
                "math=hf:HuggingFaceH4/MATH-500@test or mathdial=@fixture."
            )
        kind, _, split = head.partition(":")
        return cls(kind.strip(), location.strip(), split.strip() or "auto")


@dataclass(frozen=True)
class PrepareConfig:
    """Settings of one preparation run (the ``prepare-data`` flags).

    Attributes:
        sampler: the student-condition sampler (ability mix, misconception rate).
        conditions_per_problem: rows per problem, each with its own student condition.
        val_fraction: share of the questions of ``auto`` sources that go to validation.
        seed: fixes every condition (with the problem id and the condition's index).
        limit: read only the first N rows of each source.
        skip_errors: skip malformed rows (counted and listed) instead of stopping at the first.
        dedup: drop repeated (question, misconception) rows and training questions found in validation.
        drop_unparsed_answers: drop problems whose final answer math-verify cannot read (always reported).
    """

    RANGES: ClassVar[Mapping[str, Range]] = {
        "conditions_per_problem": POSITIVE,
        "val_fraction": Range(float, low=0, high=1, high_open=True, why="0 puts auto sources in train"),
        "seed": SEED,
        "limit": Range(int, null_ok=True, why="null reads every row"),
    }
    """The allowed values of the number settings, checked here and by the flags."""

    sampler: ConditionSampler = field(default_factory=ConditionSampler)
    conditions_per_problem: int = 1
    val_fraction: float = 0.05
    seed: int = 0
    limit: int | None = None
    skip_errors: bool = False
    dedup: bool = True
    drop_unparsed_answers: bool = False

    def __post_init__(self) -> None:
        check_ranges(self)


@dataclass
class PrepareReport:
    """What a run read, dropped and wrote (``prepare_summary.json``).

    Attributes:
        sources: per source: kind, split, location, problems read, rows skipped.
        errors: every skipped malformed row, located (``file:line: field 'x': why``).
        unparsed_answers: problems whose answer math-verify cannot read: origin, id, answer.
        duplicates: problems dropped as repeats of an earlier (question, misconception).
        overlaps: training problems dropped because their question is in validation.
        rows: rows written per split.
        abilities: per split, rows per student ability level.
        misconceptions: per split, rows that start from a misconception.
        data_sources: per split, rows per ``data_source``.
        knowledge: decomposition-cache statistics when the cache was filled, else None.
    """

    sources: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unparsed_answers: list[dict[str, str]] = field(default_factory=list)
    duplicates: int = 0
    overlaps: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    abilities: dict[str, dict[str, int]] = field(default_factory=dict)
    misconceptions: dict[str, int] = field(default_factory=dict)
    data_sources: dict[str, dict[str, int]] = field(default_factory=dict)
    knowledge: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def lines(self) -> list[str]:
        """A human-readable summary."""
        out = [
            f"{s['kind']:<8} {s['split']:<5} {s['problems']:>6} problems, {s['skipped']} skipped  {s['location']}"
            for s in self.sources
        ]
        for split in SPLITS:
            if self.rows.get(split):
                levels = ", ".join(f"{lv} {self.abilities[split].get(lv, 0)}" for lv in ABILITY_LEVELS)
                sources = ", ".join(f"{k} {v}" for k, v in sorted(self.data_sources[split].items()))
                out.append(
                    f"{split}: {self.rows[split]} rows ({sources}); abilities: {levels}; "
                    f"misconception starts: {self.misconceptions[split]}"
                )
        out.append(f"dropped: {self.duplicates} duplicate(s), {self.overlaps} train/val overlap(s)")
        if self.errors:
            out.append(f"skipped {len(self.errors)} malformed row(s); first: {self.errors[0]}")
        for bad in self.unparsed_answers:
            out.append(f"answer math-verify cannot read: {bad['origin']} ({bad['problem_id']}): {bad['answer']!r}")
        return out


def question_key(question: str) -> str:
    """The question as compared for splits and duplicates: lower case, whitespace collapsed."""
    return " ".join(question.lower().split())


def split_of(spec: SourceSpec, question: str, val_fraction: float) -> str:
    """The split a question of ``spec`` goes to (stable: a hash of the normalised question)."""
    if spec.split != "auto":
        return spec.split
    bucket = zlib.crc32(f"pearl-split|{question_key(question)}".encode()) % 10_000
    return "val" if bucket < val_fraction * 10_000 else "train"


def answer_parses(answer: str) -> bool:
    """Whether math-verify reads the final answer and finds it equal to itself."""
    return answers_match(answer, answer)


def condition_for(item: SourceItem, k: int, config: PrepareConfig) -> StudentCondition:
    """The k-th student condition of a problem (its own RNG: independent of every other row)."""
    rng = random.Random(f"pearl-condition|{config.seed}|{item.problem.problem_id}|{k}")
    return config.sampler.sample(rng, item.misconception)


def read_sources(
    specs: Sequence[SourceSpec], config: PrepareConfig, report: PrepareReport
) -> list[tuple[str, SourceItem]]:
    """(split, item) for every readable problem, answers checked (steps 1-3).

    Raises:
        InputError: for an unreadable source, or a malformed row when not skipping errors.
    """
    selected: list[tuple[str, SourceItem]] = []
    for spec in specs:
        items, errors = load_source(spec.location, spec.kind, skip_errors=config.skip_errors, limit=config.limit)
        report.errors += [str(e) for e in errors]
        report.sources.append(
            {
                "kind": spec.kind,
                "split": spec.split,
                "location": spec.location,
                "problems": len(items),
                "skipped": len(errors),
            }
        )
        for item in items:
            if not answer_parses(item.problem.answer):
                report.unparsed_answers.append(
                    {"origin": item.origin, "problem_id": item.problem.problem_id, "answer": item.problem.answer}
                )
                logger.warning("%s: math-verify cannot read the answer %r", item.origin, item.problem.answer)
                if config.drop_unparsed_answers:
                    continue
            selected.append((split_of(spec, item.problem.question, config.val_fraction), item))
    ids = Counter(item.problem.problem_id for _, item in selected)
    repeated = [pid for pid, n in ids.items() if n > 1]
    if repeated:
        raise InputError(
            f"problem id {repeated[0]!r} occurs {ids[repeated[0]]} times: the same file was given twice, or two "
            "files share a name and kind. Give each source once."
        )
    return selected


def deduplicate(selected: list[tuple[str, SourceItem]], report: PrepareReport) -> list[tuple[str, SourceItem]]:
    """Step 4: first of each (split, question, misconception); no training question that is in validation."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for split, item in selected:
        key = (split, question_key(item.problem.question), item.misconception or "")
        if key in seen:
            report.duplicates += 1
            continue
        seen.add(key)
        kept.append((split, item))
    val_questions = {question_key(item.problem.question) for split, item in kept if split == "val"}
    result = [(s, i) for s, i in kept if s == "val" or question_key(i.problem.question) not in val_questions]
    report.overlaps = len(kept) - len(result)
    return result


def verl_row(sample: PearlSample, split: str, index: int) -> dict[str, Any]:
    """One parquet row in the contract of the module docstring."""
    return {
        "data_source": sample.problem.source,
        "agent_name": AGENT_NAME,
        "prompt": sample.to_prompt(),
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": sample.problem.answer},
        "extra_info": {"index": index, "split": split, **sample.to_extra_info()},
    }


def default_opening() -> Opening:
    """The PEARL simulator's opening (deterministic in problem and condition; no backend is called)."""
    from pearl_verl.student.factory import build_simulator
    from pearl_verl.student.student_config import StudentConfig

    return build_simulator(StudentConfig()).opening


def build_rows(
    specs: Sequence[SourceSpec], config: PrepareConfig, opening: Opening | None = None
) -> tuple[dict[str, list[dict[str, Any]]], PrepareReport]:
    """Read, check, split, deduplicate and condition every source into verl rows per split.

    Args:
        specs: the sources.
        config: the run's settings.
        opening: the student's opening message; the PEARL simulator's by default.

    Returns:
        ({"train": rows, "val": rows}, the report).
    """
    if not specs:
        raise InputError("no sources given; pass at least one KIND[:SPLIT]=PATH (e.g. gsm8k=@fixture).")
    opening = opening or default_opening()
    report = PrepareReport()
    selected = read_sources(specs, config, report)
    if config.dedup:
        selected = deduplicate(selected, report)
    rows: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    abilities: dict[str, Counter[str]] = defaultdict(Counter)
    sources: dict[str, Counter[str]] = defaultdict(Counter)
    starts: Counter[str] = Counter()
    for split, item in selected:
        for k in range(config.conditions_per_problem):
            condition = condition_for(item, k, config)
            sample = PearlSample(item.problem, condition, opening(item.problem, condition))
            rows[split].append(verl_row(sample, split, len(rows[split])))
            abilities[split][condition.profile.ability] += 1
            sources[split][item.problem.source] += 1
            starts[split] += int(condition.misconception is not None)
    report.rows = {split: len(rows[split]) for split in SPLITS}
    report.abilities = {split: dict(abilities[split]) for split in SPLITS}
    report.data_sources = {split: dict(sources[split]) for split in SPLITS}
    report.misconceptions = {split: starts[split] for split in SPLITS}
    return rows, report


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Write rows as one parquet file (parent folders created)."""
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(list(rows)).to_parquet(path, index=False)
    return path


def problems_of(rows: dict[str, list[dict[str, Any]]]) -> list[Problem]:
    """The distinct problems in prepared rows, in row order (for filling the knowledge cache)."""
    seen: dict[str, Problem] = {}
    for split_rows in rows.values():
        for row in split_rows:
            sample = PearlSample.from_row(row["extra_info"], row["prompt"])
            seen.setdefault(sample.problem.problem_id, sample.problem)
    return list(seen.values())
