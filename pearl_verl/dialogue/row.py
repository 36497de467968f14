"""The dialogue row: one line per dialogue in every file of dialogues, and what ``pearl-verl view`` reads.

::

    {"row_kind": "train" | "heldout" | "eval" | "dialogue", "row_version": 1,   # pearl_verl.row_kinds
     "episode": EpisodeRecord.to_dict() | null,    # null: the dialogue failed before it began
     "judge": {8 dimensions, judge_ok, ...} | null, # the judge's fields (reward_info), null: not judged
     "reward": float | null,                       # the mean of the dimensions where the judge scored it
     ... and what its producer knows of it:
     "step", "uid", "shaped", "advantage"                          # train
     "step", "phase", "slot", "uid" (or "problem", "member")       # heldout (slot: eval seed, problem, member)
     "id", "tutor", "simulator", "item_id", "seed", "error", ...   # eval}

Producers: verl's trainer through ``pearl_sync`` (``<step>.pearl.jsonl`` beside its rollout and validation
dumps), ``train-local`` (``dialogues/step_NNNN.jsonl``, ``heldout.jsonl``) and ``eval-tutor``
(``results.jsonl``); ``pearl-verl judge`` reads ``{"id", "episode"}`` rows. Each row says which of these
it is (:mod:`pearl_verl.row_kinds`). Two files are not dialogue rows: ``simulate``'s (one line per
student turn, the unit its statistics count) and the judge's output (one line per judgement, joined to
its dialogue by id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pearl_verl.dims import DIMENSIONS
from pearl_verl.row_kinds import DIALOGUE_KINDS, stamped


def dialogue_row(kind: str, episode: Mapping[str, Any] | None, judge: Mapping[str, Any] | None,
                 reward: float | None, **known: Any) -> dict[str, Any]:
    """A dialogue row of ``kind`` (one of :data:`~pearl_verl.row_kinds.DIALOGUE_KINDS`): the episode, its
    judgement and reward, and ``known`` (the fields its producer adds)."""
    if kind not in DIALOGUE_KINDS:
        raise KeyError(f"{kind!r} is not a dialogue row's kind ({', '.join(DIALOGUE_KINDS)})")
    return stamped(kind, {"episode": episode, "judge": judge, "reward": reward, **known})


def positional_slots(dialogues: int, seeds: int) -> list[list[int]]:
    """``[eval seed, problem, member]`` of an evaluation's dialogues by position (``seeds`` equal groups, member 0):
    the slots of an evaluation that recorded none."""
    size = max(dialogues // max(seeds, 1), 1)
    return [[i // size, i % size, 0] for i in range(dialogues)]


def judgement_from_dims(dims: Mapping[str, Sequence[float | None]], rewards: Sequence[float | None],
                        i: int) -> dict[str, Any]:
    """Dialogue ``i``'s judge fields rebuilt from an evaluation's per-dimension scores (judged where it has a reward):
    the judgement of an evaluation that kept none."""
    return {**{d: dims[d][i] for d in DIMENSIONS if d in dims}, "judge_ok": int(rewards[i] is not None)}
