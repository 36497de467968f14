"""What a row is: every JSONL row the project writes says so.

Each such row carries ``row_kind`` (one of :data:`ROW_KINDS`) and ``row_version`` (its format's number), so a reader
reads it by its kind and never guesses from the keys it happens to have. A format that changes gets a new version
and one converter step (``pearl-verl convert-rows``); rows written before rows carried a kind go through the same
command, and the guess their keys call for lives there alone.

Not stamped: files that are one document (``config.json``, summaries, the fitted judge's parameters, which carry
their own format and version), the data sets the package ships, and verl's own files (its rollout dumps and logs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KIND_FIELD = "row_kind"
VERSION_FIELD = "row_version"


@dataclass(frozen=True)
class RowKind:
    """One kind of row: its current version, what a row holds and who writes it."""

    version: int
    holds: str
    writers: str


ROW_KINDS: dict[str, RowKind] = {
    "train": RowKind(1, "a training dialogue: episode, judge, reward, step, uid (its group), shaped rewards and the "
                        "advantage the update used",
                     "pearl_sync's <step>.pearl.jsonl rollout dumps; train-local's dialogues/step_NNNN.jsonl"),
    "heldout": RowKind(1, "a held-out dialogue: episode, judge, reward, step, and its place at every evaluation "
                          "(slot, or problem and member)",
                       "pearl_sync's validation dumps; train-local's heldout.jsonl"),
    "eval": RowKind(1, "an evaluated tutor's dialogue: id, tutor, simulator, item, seed, episode (null: it failed "
                       "before it began), judge, error",
                    "eval-tutor's results.jsonl"),
    "dialogue": RowKind(1, "a dialogue: id, episode, and its judge where it was judged",
                        "gen-sft's records.jsonl; the fault drill's episodes.jsonl; what pearl-verl judge reads"),
    "judgement": RowKind(1, "one judgement: id and line of the dialogue it judged, the reward fields, gate, attempts, "
                            "error, criteria",
                         "pearl-verl judge"),
    "student_turn": RowKind(1, "one simulated student turn: dialogue, turn, the tutor message before it, the "
                               "student's message and the state behind it",
                            "pearl-verl simulate --out"),
    "metrics": RowKind(1, "one logged step or evaluation of a run: phase, step and its metrics",
                       "train-local's metrics.jsonl"),
    "comparison_pair": RowKind(1, "two tutors' dialogues of one item for the teachers' study", "compare build-pairs"),
    "vote": RowKind(1, "one teacher's vote on a comparison pair", "compare report --out (votes.jsonl)"),
    "preference_pair": RowKind(1, "two dialogues, the one preferred and by what margin", "compare report --export; "
                                                                                         "eval-rm --pairs-out"),
    "rm_verdict": RowKind(1, "what a reward model said about one preference pair", "eval-rm"),
    "mtb_generation": RowKind(1, "one MathTutorBench example's generation and its reward-model win",
                              "eval-mtb (mtb_generations.jsonl)"),
    "annotation": RowKind(1, "one dialogue's student turns labelled with behaviours", "eval-simulator"),
}
"""Every kind of row the project writes, by name."""

DIALOGUE_KINDS = ("train", "heldout", "eval", "dialogue")
"""The kinds that hold one whole dialogue (an ``episode``) a row."""

CONVERT_HINT = "`pearl-verl convert-rows PATH -o OUT` converts rows written before rows carried their kind"


class RowKindError(ValueError):
    """A row without a kind, of a kind no writer of this version writes, or of a newer version than it reads."""


def stamped(kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with its kind and the kind's current version first.

    Raises:
        KeyError: for a kind that is not in :data:`ROW_KINDS` (a bug of the writer, not of any input).
    """
    return {KIND_FIELD: kind, VERSION_FIELD: ROW_KINDS[kind].version, **row}


def kind_of(row: Mapping[str, Any]) -> str:
    """The row's kind, checked against what this version reads.

    Raises:
        RowKindError: the row has no kind (written before rows carried one, or by another program), a kind
            unknown here, or a version this one does not read; the message says which and what to do.
    """
    kind, version = row.get(KIND_FIELD), row.get(VERSION_FIELD)
    if kind is None:
        raise RowKindError(f"no {KIND_FIELD}: {CONVERT_HINT}.")
    if not isinstance(kind, str) or kind not in ROW_KINDS:
        raise RowKindError(f"{KIND_FIELD} {_shown(kind)} is none of {sorted(ROW_KINDS)}.")
    current = ROW_KINDS[kind].version
    if version == current and isinstance(version, int) and not isinstance(version, bool):
        return kind
    if isinstance(version, int) and not isinstance(version, bool) and version > current:
        raise RowKindError(f"{kind} row_version {version} is newer than this pearl_verl reads ({current}): "
                           "upgrade pearl_verl.")
    raise RowKindError(f"{kind} {VERSION_FIELD} {_shown(version)} is not {current}: {CONVERT_HINT}.")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
