"""``<step>.pearl.jsonl`` beside verl's rollout and validation dumps, in dialogue rows
(:mod:`pearl_verl.dialogue.row`): what ``pearl-verl view`` and the held-out summary read.

verl's V1 dumps (``trainer.rollout_data_dir``, ``trainer.validation_data_dir``) hold each sample's decoded
prompt and response, score and uid: one flat text per dialogue. The ``pearl_sync`` trainer adds, per
dialogue, the episode the agent loop recorded (turns and student states) and the judge's reward fields;
for a training step also the shaped rewards and the advantage the update used (``train-local``'s
``dialogues/`` format), for a validation the problem's row and the group member, which pair two
validations of a run dialogue for dialogue. A turn longer than :data:`MAX_TURN_CHARS` is cut (and says
so), so a sample's row stays bounded whatever the response budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pearl_verl.advantage.estimator import AdvantageConfig
from pearl_verl.advantage.inputs import shaped_rewards
from pearl_verl.dialogue.row import dialogue_row
from pearl_verl.judge.reward_info import reward_score
from pearl_verl.verl_plugin.advantage_step import reward_info_of
from pearl_verl.verl_plugin.names import EPISODE_KEY
from pearl_verl.write_whole import write_whole

MAX_TURN_CHARS = 8_000


def dump_rows(step: int, uids: Sequence[str], extras: Sequence[Any], advantages: Sequence[float],
              settings: AdvantageConfig) -> list[dict[str, Any]]:
    """One row per dialogue (the final row of each session; ``uids`` etc. already restricted to those)."""
    infos = [dict(reward_info_of(extra)) for extra in extras]
    shaped = shaped_rewards(infos, list(uids), settings)
    return [{**_judged("train", step, uid, extra, info), "shaped": shaped[k], "advantage": float(advantages[k])}
            for k, (uid, extra, info) in enumerate(zip(uids, extras, infos, strict=True))]


def validation_rows(step: int, uids: Sequence[str], extras: Sequence[Any], problems: Sequence[int],
                    members: Sequence[int]) -> list[dict[str, Any]]:
    """One row per validation dialogue, with its problem (the row's ``extra_info.index``) and group member."""
    return [{**_judged("heldout", step, uid, extra, dict(reward_info_of(extra))), "problem": int(problem),
             "member": int(member)}
            for uid, extra, problem, member in zip(uids, extras, problems, members, strict=True)]


def _judged(kind: str, step: int, uid: str, extra: Any, info: dict[str, Any]) -> dict[str, Any]:
    episode = extra.get(EPISODE_KEY) if isinstance(extra, Mapping) else None
    return dialogue_row(kind, _bounded(episode) if isinstance(episode, Mapping) else None, info,
                        reward_score(info) if info.get("judge_ok") else None, step=step, uid=str(uid))


def write_dump(folder: str | Path, step: int, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``folder/<step>.pearl.jsonl``."""
    return write_whole(Path(folder) / f"{step}.pearl.jsonl",
                       (json.dumps(row, sort_keys=True, default=float) + "\n" for row in rows))


def _bounded(episode: Mapping[str, Any]) -> dict[str, Any]:
    turns = []
    for turn in episode.get("turns", []):
        text = str(turn.get("text", ""))
        if len(text) > MAX_TURN_CHARS:
            text = text[:MAX_TURN_CHARS] + f" [... {len(text) - MAX_TURN_CHARS} more characters cut in this dump]"
        turns.append({**turn, "text": text})
    return {**episode, "turns": turns}
