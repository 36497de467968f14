"""Held-out evaluation of a local run: what a person reads to see whether the tutor got better.

The evaluation is verl's validation inside ``main_ppo`` (:func:`pearl_verl.train_local.verl_run.validation_overrides`):
the held-out problems, each tutored ``group size x eval seeds`` times on the run's rollout engine and scored
by its reward loop's judge, before training and every ``eval_every`` steps. The ``pearl_sync`` trainer writes
each validation's judged dialogues (``validation/<step>.pearl.jsonl``); this module reads them into a
:class:`HeldOut`, pairs two of them dialogue for dialogue (same problem, student condition and group
member), and records observable features of each dialogue (from
:func:`pearl_verl.judge.features.extract_features`, the features the offline judge reads), so a change in
reward can be traced to a change in what the tutor writes.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import TUTOR, EpisodeRecord
from pearl_verl.dialogue.legible import context_words, well_formed
from pearl_verl.dialogue.row import dialogue_row, judgement_from_dims, positional_slots
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import located
from pearl_verl.judge.features import asks_to_recheck, extract_features, praises
from pearl_verl.row_kinds import RowKindError, kind_of
from pearl_verl.stats import mean_ci
from pearl_verl.train_local.run_outputs import append_metrics, read_metrics
from pearl_verl.write_whole import write_whole

OBSERVABLES: dict[str, str] = {
    "well_formed": "tutor turns that are complete sentences of words",
    "asks_about_work": "tutor turns that ask about the student's work",
    "rechecks": "tutor turns that point to a mistake (send the student back to re-check)",
    "praises": "tutor turns that praise or confirm",
    "praises_wrong": "dialogues in which the tutor praises a wrong attempt and does not point to the mistake",
    "gives_answer": "tutor turns that state the final answer before the student has",
    "blames": "dialogues in which the tutor blames the student",
    "tutor_ends_after_solution": "dialogues the tutor closes after the student solved it",
    "solved": "dialogues in which the student reaches the answer",
}
"""Observable features per held-out dialogue, in [0, 1], and what each measures. The turn moves count well-formed
turns only (:func:`pearl_verl.dialogue.legible.well_formed`): "check" inside letter soup is no re-check prompt."""

_ABOUT_WORK = re.compile(r"\b(you|your|step|number|answer|got|get)\b", re.I)


def asks_about_work(text: str) -> bool:
    """Whether a tutor turn asks a question about the student's work ("How did you get that number?")."""
    return "?" in text and bool(_ABOUT_WORK.search(text))


def tutor_turns(episode: EpisodeRecord) -> list[tuple[int, str, bool]]:
    """Each tutor turn's index, text and whether it is well-formed (the problem's and the student's words count as
    words)."""
    known = context_words([episode.problem.question, *(t.text for t in episode.turns if t.role != TUTOR)])
    return [(i, t.text, well_formed(t.text, known)) for i, t in enumerate(episode.turns) if t.role == TUTOR]


def observables(episode: EpisodeRecord) -> dict[str, float]:
    """The :data:`OBSERVABLES` of one dialogue."""
    f = extract_features(episode)
    tutor = tutor_turns(episode)
    formed = [(i, text) for i, text, ok in tutor if ok]

    def share(test: Callable[[int, str], bool]) -> float:
        return sum(test(i, text) for i, text in formed) / len(tutor) if tutor else 0.0

    return {
        "well_formed": len(formed) / len(tutor) if tutor else 0.0,
        "asks_about_work": share(lambda i, text: asks_about_work(text)),
        "rechecks": share(lambda i, text: asks_to_recheck(text)),
        "praises": share(lambda i, text: praises(text)),
        "praises_wrong": float(bool(f.accepting_turns)),  # the judges' reading (features.accepts_wrong)
        "gives_answer": share(lambda i, text: i in f.leak_turns),
        "blames": float(f.blame_turns > 0),
        "tutor_ends_after_solution": float(f.solved and episode.end_reason == "tutor_ended"),
        "solved": float(f.solved),
    }


@dataclass
class HeldOut:
    """One evaluation: per dialogue, in a fixed order (eval seed, problem, group member).

    Attributes:
        step: training step of the evaluated policy.
        seeds: eval seeds used: each problem's dialogues are ``seeds`` groups of the run's group size.
        rewards: mean judge reward per dialogue; None where the judge failed.
        dims: per dimension, the score per dialogue (None where the judge failed).
        observed: per observable, its value per dialogue.
        episodes: the dialogues.
        judgements: per dialogue, the judge's fields (for ``pearl-verl view``).
        slots: per dialogue, ``[eval seed, problem, group member]``: what pairs two evaluations (empty: by
            position, as :func:`append_heldout` then numbers them).
    """

    step: int
    seeds: int
    rewards: list[float | None]
    dims: dict[str, list[float | None]]
    observed: dict[str, list[float]] = field(default_factory=dict)
    episodes: list[EpisodeRecord] = field(default_factory=list)
    judgements: list[dict[str, Any]] = field(default_factory=list)
    slots: list[list[int]] = field(default_factory=list)

    @classmethod
    def of(cls, step: int, seeds: int, episodes: Sequence[EpisodeRecord], infos: Sequence[dict[str, Any]],
           judgements: Sequence[dict[str, Any]] = (), slots: Sequence[Sequence[int]] = ()) -> HeldOut:
        ok = [bool(info["judge_ok"]) for info in infos]
        rewards = [statistics.fmean(float(info[d]) for d in DIMENSIONS) if good else None for info, good in zip(infos, ok)]
        dims = {d: [float(info[d]) if good else None for info, good in zip(infos, ok)] for d in DIMENSIONS}
        per_episode = [observables(e) for e in episodes]
        observed = {name: [row[name] for row in per_episode] for name in OBSERVABLES}
        return cls(step, seeds, rewards, dims, observed, list(episodes), list(judgements), [list(s) for s in slots])

    @classmethod
    def from_rows(cls, step: int, seeds: int, rows: Sequence[dict[str, Any]]) -> HeldOut:
        """Dialogue rows with their ``slot``, in slot order; a row without its episode is left out."""
        rows = sorted((row for row in rows if row.get("episode")), key=lambda row: row["slot"])
        return cls.of(step, seeds, [EpisodeRecord.from_dict(row["episode"]) for row in rows],
                      [row["judge"] for row in rows], [row["judge"] for row in rows], [row["slot"] for row in rows])

    @classmethod
    def from_validation(cls, path: Path, seeds: int, group_size: int) -> HeldOut:
        """The validation dump ``path`` (``<step>.pearl.jsonl``, rows with ``problem`` and ``member``) of a
        validation that drew ``seeds * group_size`` dialogues per problem."""
        rows = read_metrics(path)
        step = int(rows[0]["step"]) if rows else int(path.name.split(".")[0])
        return cls.from_rows(step, seeds, [
            {**row, "slot": [row["member"] // group_size, row["problem"], row["member"] % group_size]} for row in rows])

    @property
    def seed_means(self) -> list[float]:
        """Mean reward under each eval seed (their spread is the evaluation's own noise)."""
        if self.slots:
            return [_mean([r for r, slot in zip(self.rewards, self.slots) if slot[0] == k]) for k in range(self.seeds)]
        size = len(self.rewards) // self.seeds
        return [_mean(self.rewards[k * size : (k + 1) * size]) for k in range(self.seeds)]

    def metrics(self) -> dict[str, Any]:
        """``eval/...`` entries for metrics.jsonl."""
        out: dict[str, Any] = {
            "eval/reward/mean": _mean(self.rewards),
            "eval/reward/seed_means": self.seed_means,
            "eval/seeds": self.seeds,
            "eval/dialogues": len(self.rewards),
            "eval/ended_normally_rate": statistics.fmean(e.ended_normally for e in self.episodes),
            "eval/tutor_turns/mean": statistics.fmean(e.tutor_turns for e in self.episodes),
        }
        out.update({f"eval/dim/{d}": _mean(values) for d, values in self.dims.items()})
        out.update({f"eval/obs/{name}": statistics.fmean(values) for name, values in self.observed.items()})
        return out


def paired(before: HeldOut, after: HeldOut) -> list[tuple[int, int]]:
    """Positions ``(i, j)`` of the same dialogue slot in ``before`` and ``after`` (by slot, else by position)."""
    if before.slots and after.slots:
        where = {tuple(slot): j for j, slot in enumerate(after.slots)}
        return [(i, where[tuple(slot)]) for i, slot in enumerate(before.slots) if tuple(slot) in where]
    return [(i, i) for i in range(min(len(before.rewards), len(after.rewards)))]


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else math.nan


def summary(before: HeldOut, after: HeldOut) -> str:
    """Held-out reward before -> after with the paired 95% interval, per-dimension deltas and the
    observable changes, as lines a person reads at the end of a run."""
    pairs = [(before.rewards[i], after.rewards[j]) for i, j in paired(before, after)
             if before.rewards[i] is not None and after.rewards[j] is not None]
    gain = mean_ci([b - a for a, b in pairs]) if pairs else None
    spread = max(before.seed_means) - min(before.seed_means)
    lines = [
        f"held-out judge reward, step {before.step} -> {after.step} "
        f"({len(pairs)} dialogues = {len(pairs) // max(before.seeds, 1)} x {before.seeds} eval seeds, paired):",
        f"  {_mean(before.rewards):.3f} -> {_mean(after.rewards):.3f}"
        + (f"   change {gain.mean:+.3f}, 95% interval [{gain.low:+.3f}, {gain.high:+.3f}]" if gain else ""),
        f"  step-{before.step} spread over its {before.seeds} eval seeds: {spread:.3f} "
        f"(seed means {', '.join(f'{m:.3f}' for m in before.seed_means)})",
        "  per dimension: " + "  ".join(f"{d} {_mean(after.dims[d]) - _mean(before.dims[d]):+.2f}" for d in DIMENSIONS),
        "what the tutor does:",
    ]
    for name, text in OBSERVABLES.items():
        # files written before an observable existed have none of it: "n/a"
        lines.append(f"  {text}: {_share(before.observed.get(name, ()))} -> {_share(after.observed.get(name, ()))}")
    return "\n".join(lines)


def _share(values: Sequence[float]) -> str:
    return f"{100 * statistics.fmean(values):.0f}%" if values else "n/a"


def write_heldout_markdown(path: Path, before: HeldOut, after: HeldOut, count: int = 4) -> Path:
    """A Markdown file with the first ``count`` held-out dialogues at both steps, side by side in
    order (same slot: problem, student condition, eval seed and group member), each with its judge reward."""
    lines = [f"# Held-out dialogues at step {before.step} and step {after.step}", "",
             "The same held-out problems and student conditions at both steps, slot for slot; reward = mean judge score.",
             ""]
    for n, pair in enumerate(paired(before, after)[:count]):
        lines += [f"## Dialogue {n + 1}: {before.episodes[pair[0]].problem.question}", ""]
        for held, i in zip((before, after), pair):
            reward = held.rewards[i]
            shown = f"{reward:.3f}" if reward is not None else "judge failed"
            lines += [f"### step {held.step} (reward {shown}, ended: {held.episodes[i].end_reason})", ""]
            lines += [f"- **{'tutor' if t.role == TUTOR else 'student'}**: {t.text.strip() or '(empty)'}"
                      for t in held.episodes[i].turns]
            lines.append("")
    return write_whole(path, "\n".join(lines))


def append_heldout(path: Path, held: HeldOut, phase: str) -> None:
    """Append one evaluation: a dialogue row (:mod:`pearl_verl.dialogue.row`) per dialogue, with its slot."""
    judgements = held.judgements or [judgement_from_dims(held.dims, held.rewards, i) for i in range(len(held.rewards))]
    slots = held.slots or positional_slots(len(held.rewards), held.seeds)  # as seed_means groups them
    for episode, judge, reward, slot in zip(held.episodes, judgements, held.rewards, slots, strict=True):
        append_metrics(path, dialogue_row("heldout", episode.to_dict(), judge, reward, step=held.step, phase=phase,
                                          slot=slot, seeds=held.seeds))


def read_heldout(path: Path) -> list[tuple[str, HeldOut]]:
    """Every evaluation logged so far, in order, with its phase (``initial``, ``cold_start``, ``train``).

    Raises:
        InputError: for a row that is not a held-out dialogue row of this version (a file written before rows
            carried their kind: ``pearl-verl convert-rows`` rewrites it).
    """
    evaluations: list[tuple[str, HeldOut]] = []
    rows: list[dict[str, Any]] = []
    for number, row in enumerate([*read_metrics(path), None], start=1):
        if row is not None:
            try:
                kind = kind_of(row)
            except RowKindError as exc:
                raise located(path, number, str(exc)) from None
            if kind != "heldout":
                raise located(path, number, f"a {kind} row, not a held-out dialogue row.")
        if rows and (row is None or (row["phase"], row["step"]) != (rows[0]["phase"], rows[0]["step"])):
            evaluations.append((rows[0]["phase"], HeldOut.from_rows(rows[0]["step"], rows[0]["seeds"], rows)))
            rows = []
        if row is not None:
            rows.append(row)
    return evaluations
