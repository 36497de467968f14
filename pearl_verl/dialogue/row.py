"""The dialogue row: one line per dialogue in every file of dialogues, and what ``pearl-verl view`` reads.

::

    {"episode": EpisodeRecord.to_dict() | null,    # null: the dialogue failed before it began
     "judge": {8 dimensions, judge_ok, ...} | null, # the judge's fields (reward_info), null: not judged
     "reward": float | null,                       # the mean of the dimensions where the judge scored it
     ... and what its producer knows of it:
     "step", "uid", "shaped", "advantage"                          # a training dialogue
     "step", "phase", "slot", "uid"                                # a held-out one (slot: eval seed, problem, member)
     "id", "tutor", "simulator", "item_id", "seed", "error", ...   # an evaluated tutor's}

Producers: verl's trainer through ``pearl_sync`` (``<step>.pearl.jsonl`` beside its rollout and validation
dumps), ``train-local`` (``dialogues/step_NNNN.jsonl``, ``heldout.jsonl``) and ``eval-tutor``
(``results.jsonl``); ``pearl-verl judge`` reads ``{"id", "episode"}`` rows. Which of these a row is
follows from the fields it has (:func:`row_kind`). Two files are not dialogue rows: ``simulate``'s
(one line per student turn, the unit its statistics count) and the judge's output (one line per
judgement, joined to its dialogue by id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KINDS = ("train", "heldout", "eval", "dialogues")
"""What a dialogue row is: a training dialogue, a held-out one, an evaluated tutor's, or a bare dialogue."""


def dialogue_row(episode: Mapping[str, Any] | None, judge: Mapping[str, Any] | None, reward: float | None,
                 **known: Any) -> dict[str, Any]:
    """A dialogue row: the episode, its judgement and reward, and ``known`` (the fields its producer adds)."""
    return {"episode": episode, "judge": judge, "reward": reward, **known}


def row_kind(row: Mapping[str, Any]) -> str:
    """One of :data:`KINDS`, from the fields the row has."""
    if "advantage" in row:
        return "train"
    if "slot" in row or "member" in row:
        return "heldout"
    if "tutor" in row:
        return "eval"
    return "dialogues"
