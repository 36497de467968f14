"""Simulator statistics from annotated dialogues: the paper's diversity tables and controllability.

Dialogues come from eval-tutor results (each line names its simulator) or from plain
``EpisodeRecord`` JSONL files (named by ``--name`` or the file stem). Annotations are written to a
JSONL file incrementally and resumably (one line per dialogue; the last line per id wins), then the
statistics of :mod:`pearl_verl.student.diversity` are computed per simulator over the dialogues
annotated ok; flagged ones are counted, never guessed.

Ability-conditioned controllability (paper §5.3): per ability level of the student's profile
(low / medium / high), the response accuracy, i.e. the share of correct attempts among student
replies that attempt something (attempt outcome other than ``none``), with a 95% Wilson interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, ATTEMPT_OUTCOMES
from pearl_verl.errors import InputError, located
from pearl_verl.eval.annotate import PLANNED_SOURCE, Annotator, annotation_row, labelled, turns_of
from pearl_verl.eval.runner import read_results
from pearl_verl.jsonl import drop_cut_tail, json_line, read_objects
from pearl_verl.stats import Estimate, wilson_ci
from pearl_verl.student.diversity import diversity_report
from pearl_verl.student.fallbacks import FallbackRates
from pearl_verl.student.taxonomy import BEHAVIOUR_TITLES, BEHAVIOURS

logger = logging.getLogger(__name__)

ATTEMPT_TITLES = {"correct": "Correct", "partial": "Partially correct", "incorrect": "Incorrect", "none": "No attempt"}


@dataclass(frozen=True)
class Dialogue:
    """One dialogue to annotate, with what the report groups it by."""

    key: str
    simulator: str
    tutor: str
    episode: EpisodeRecord

    @property
    def meta(self) -> dict[str, Any]:
        return {"simulator": self.simulator, "tutor": self.tutor, "ability": self.episode.condition.profile.ability}


def read_dialogues(path: Path, name: str | None = None) -> list[Dialogue]:
    """Dialogues of one file: eval-tutor results, or one ``EpisodeRecord`` (optionally with ``id``) per line.

    Args:
        path: the JSONL file.
        name: simulator name for lines that do not carry one (default: the file stem).

    Raises:
        InputError: for a line that is neither shape (file and line are named).
    """
    dialogues = []
    default = name or path.stem
    # ``index`` counts non-blank lines: it names id-less dialogues as earlier versions did, so a
    # resumed run finds their annotations; errors name the file's own line numbers.
    for index, (number, row) in enumerate(read_objects(path, "dialogue file"), start=1):
        if "episode" in row and row["episode"] is None:
            continue  # an eval-tutor line whose dialogue failed: nothing to annotate
        try:
            episode = EpisodeRecord.from_dict(row.get("episode", row))
        except (KeyError, TypeError, ValueError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            raise located(path, number, f"not an eval-tutor result or an EpisodeRecord ({reason}).") from None
        key = str(row.get("id", f"{default}|{path.stem}-{index}"))
        dialogues.append(Dialogue(key, str(row.get("simulator", default)), str(row.get("tutor", "")), episode))
    return dialogues


async def annotate_dialogues(
    annotator: Annotator,
    dialogues: Sequence[Dialogue],
    output: Path,
    concurrency: int = 16,
    retry_failed: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[int, int]:
    """Annotate every dialogue not yet in ``output``; returns (annotated now, already there).

    Raises:
        InputError: when ``output`` holds annotations from another source (planned vs an LLM).
    """
    existing = read_results(output)
    sources = {row.get("source") for row in existing.values()}
    if existing and sources != {annotator.source}:
        raise InputError(
            f"{output} holds annotations from {sorted(map(str, sources))}, not {annotator.source!r}; "
            "annotations from different sources cannot share one file: use another --out."
        )
    done = {k for k, row in existing.items() if row["ok"] or not retry_failed}
    todo = [d for d in dialogues if d.key not in done]
    semaphore = asyncio.Semaphore(concurrency)
    output.parent.mkdir(parents=True, exist_ok=True)
    drop_cut_tail(output)
    with output.open("a", encoding="utf-8") as out:

        async def one(dialogue: Dialogue) -> None:
            async with semaphore:
                annotation = await annotator.annotate(dialogue.episode)
            row = annotation_row(dialogue.key, dialogue.meta, annotation)
            out.write(json_line(row))
            out.flush()
            if on_done is not None:
                on_done(row)

        await asyncio.gather(*(one(d) for d in todo))
    return len(todo), len(dialogues) - len(todo)


def response_accuracy(rows: Sequence[Mapping[str, Any]]) -> dict[str, Estimate]:
    """Per ability level: correct attempts among attempted replies, with a 95% Wilson interval."""
    out: dict[str, Estimate] = {}
    for band in ABILITY_LEVELS:
        turns = [t for r in rows if r["ok"] and r["ability"] == band for t in turns_of(dict(r))]
        attempted = [t for t in turns if t.attempt != "none"]
        if attempted:
            out[band] = wilson_ci(sum(t.attempt == "correct" for t in attempted), len(attempted))
    return out


def simulator_summary(rows: Sequence[Mapping[str, Any]], simulators: Sequence[str]) -> dict[str, Any]:
    """Per simulator: counts, the diversity report and the controllability estimates."""
    summary: dict[str, Any] = {}
    for simulator in simulators:
        mine = [dict(r) for r in rows if r["simulator"] == simulator]
        dialogues = [d for d in labelled(mine) if d]
        summary[simulator] = {
            "dialogues": len(mine),
            "annotated": sum(r["ok"] for r in mine),
            "flagged": sum(not r["ok"] for r in mine),
            "diversity": diversity_report(dialogues).to_dict() if dialogues else None,
            "controllability": {b: e.to_dict() for b, e in response_accuracy(mine).items()},
        }
    return summary


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def simulator_markdown(summary: Mapping[str, Any], source: str) -> str:
    """The paper's simulator tables (Tables 5-7) and the controllability table."""
    sims = [s for s, v in summary.items() if v["diversity"] is not None]
    note = (
        "Labels: PLANNED LABELS, NOT ANNOTATIONS (the simulator's own intent and attempt from its trace; run with an "
        "annotator endpoint for the paper's protocol)."
        if source == PLANNED_SOURCE
        else f"Labels: annotations by {source} with the strict 13-label schema."
    )
    lines = ["# Student-simulator evaluation", "", note, "", "## Behavioural diversity", ""]
    head = ["Simulator", "Coverage", "Labels >= 1%", "Mean Labels", "Attempt Entropy", "Unique Sets"]
    head += ["Label-Set Entropy", "Transition Entropy", "turns", "dialogues", "flagged"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for s in sims:
        d, v = summary[s]["diversity"], summary[s]
        trans = "—" if d["transition_entropy"] is None else f"{d['transition_entropy']:.3f}"
        lines.append(
            f"| {s} | {d['label_coverage']}/{d['taxonomy_size']} | {d['labels_at_least_1pct']} | {d['mean_labels']:.3f} "
            f"| {d['attempt_entropy']:.3f} | {d['unique_label_sets']} | {d['label_set_entropy']:.3f} | {trans} "
            f"| {d['turns']} | {v['annotated']} | {v['flagged']} |"
        )
    lines += [
        "",
        (
            "Entropies: attempt entropy normalised by log 4; label-set and transition entropy in bits; "
            "transition entropy is H(attempt_t+1 | attempt_t) within dialogues."
        ),
        "",
    ]
    fallbacks = {s: FallbackRates.from_dict(v["student_fallbacks"]).line() for s, v in summary.items()
                 if v.get("student_fallbacks")}
    if any(fallbacks.values()):  # a simulator whose model was not asked (offline) has no line
        lines += [f"{s}: {line}." for s, line in fallbacks.items() if line] + [""]
    lines += ["## Attempt-outcome distribution over student replies (%)", ""]
    lines += ["| Simulator | " + " | ".join(ATTEMPT_TITLES[a] for a in ATTEMPT_OUTCOMES) + " |"]
    lines += ["|" + "|".join(["---"] * (len(ATTEMPT_OUTCOMES) + 1)) + "|"]
    for s in sims:
        dist = summary[s]["diversity"]["attempt_distribution"]
        lines.append(f"| {s} | " + " | ".join(_pct(dist[a]) for a in ATTEMPT_OUTCOMES) + " |")
    lines += ["", "## Behaviour-label frequency over student replies (%, labels are non-exclusive)", ""]
    lines += ["| Behaviour | " + " | ".join(sims) + " |", "|" + "|".join(["---"] * (len(sims) + 1)) + "|"]
    for label in BEHAVIOURS:
        freqs = [_pct(summary[s]["diversity"]["label_frequencies"][label]) for s in sims]
        lines.append(f"| {BEHAVIOUR_TITLES[label]} | " + " | ".join(freqs) + " |")
    lines += ["", "## Ability-conditioned controllability: response accuracy (%, 95% Wilson interval)", ""]
    lines += ["| Simulator | " + " | ".join(ABILITY_LEVELS) + " |", "|---|---|---|---|"]
    for s, v in summary.items():
        cells = []
        for band in ABILITY_LEVELS:
            e = v["controllability"].get(band)
            cells.append("—" if e is None else f"{_pct(e['mean'])} [{_pct(e['low'])}, {_pct(e['high'])}] (n={e['n']})")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "Response accuracy: correct attempts among student replies that attempt something.", ""]
    return "\n".join(lines)
