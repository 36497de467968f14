"""The cold-start stage of a local run (paper §3.3.1, in miniature): SFT on teacher dialogues.

The paper first fine-tunes the tutor on dialogues a strong teacher (DeepSeek-V3.2) holds with the
simulator, then runs RL. Locally the teachers are scripted tutors (test doubles for a teacher model)
talking with the same simulated students; the dialogues go through verl's own multi-turn SFT
dataset (chat template, loss on the tutor's turns only) and verl's ``sft_loss`` on the same FSDP2
actor that RL then continues from. Two pools (:data:`pearl_verl.tutor.styles.TEACHER_POOLS`):

- ``mixed`` (train-local's default): three teachers of distinct styles (coaching, lecturing,
  terse), one per dialogue in turn, unfiltered, so the tiny model starts RL able to write several
  styles and RL selects among them by the judge; ``mixed-blame`` adds a blaming teacher;
- ``socratic``: the scripted Socratic teacher alone, filtered as ``pearl-verl gen-sft`` filters
  (:func:`pearl_verl.sft.filters.drop_reason`: completed, no answer leak, ...), the paper's recipe
  (its problem-specific messages are beyond the tiny model; use it with a pretrained one).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.errors import InputError
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS
from pearl_verl.sft.filters import FilterConfig, drop_reason
from pearl_verl.student.types import StudentSimulator
from pearl_verl.tutor.policy import TutorPolicy
from pearl_verl.tutor.prompts import episode_messages
from pearl_verl.tutor.styles import TEACHER_POOLS


async def teacher_dialogues(
    simulator: StudentSimulator,
    samples: list[PearlSample],
    per_sample: int,
    limits: EpisodeLimits,
    seed: int,
    pool: str = "socratic",
) -> list[EpisodeRecord]:
    """``per_sample`` teacher dialogues with each sample's student (own seeds), teachers in turn.

    Raises:
        InputError: for an unknown pool name.
    """
    if pool not in TEACHER_POOLS:
        raise InputError(f"cold-start teacher pool {pool!r} is not one of {sorted(TEACHER_POOLS)}.")
    teachers: list[TutorPolicy] = [cls() for cls in TEACHER_POOLS[pool]]
    rng = random.Random(seed)

    async def one(sample: PearlSample, teacher: TutorPolicy) -> EpisodeRecord:
        session = await simulator.start(sample.problem, sample.condition, rng.randrange(2**31), sample.opening)
        return await run_episode(
            sample.problem, sample.condition, session, sample.opening, policy_step(teacher, sample.problem), limits
        )

    jobs = [(s, teachers[(i * per_sample + k) % len(teachers)]) for i, s in enumerate(samples) for k in range(per_sample)]
    return await asyncio.gather(*(one(s, t) for s, t in jobs))


def keep_for_pool(episodes: list[EpisodeRecord], pool: str) -> list[EpisodeRecord]:
    """The dialogues the cold start trains on: ``gen-sft``'s filters for the Socratic teacher; for the
    mixed pool every dialogue but failed ones (filtering by quality would remove the styles RL must
    learn to tell apart)."""
    if pool == "socratic":
        return keep_for_sft(episodes)
    kept = [e for e in episodes if e.end_reason not in FAILED_EPISODE_REASONS]
    if not kept:
        raise InputError(f"every teacher dialogue failed: {dict(Counter(e.end_reason for e in episodes))}")
    return kept


def keep_for_sft(episodes: list[EpisodeRecord], config: FilterConfig | None = None) -> list[EpisodeRecord]:
    """The dialogues that pass ``gen-sft``'s per-dialogue filters.

    Raises:
        InputError: when none passes (with the count of each drop reason), since SFT on nothing
            would silently leave the model as it was.
    """
    config = config or FilterConfig()
    reasons = [drop_reason(e, None, config) for e in episodes]
    kept = [e for e, reason in zip(episodes, reasons) if reason is None]
    if not kept:
        raise InputError(f"no teacher dialogue passed the SFT filters: {dict(Counter(reasons))}")
    return kept


def write_sft_parquet(episodes: list[EpisodeRecord], path: Path) -> Path:
    """verl's multi-turn SFT format: one ``messages`` list per row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"messages": [episode_messages(e) for e in episodes]}).to_parquet(path)
    return path


def sft_steps(actor: Any, tokenizer: Any, parquet: Path, steps: int, batch_size: int, max_length: int, seed: int,
              lr: float | None = None) -> list[float]:
    """Run ``steps`` SFT updates with verl's ``sft_loss`` on the actor; returns the loss of each.

    ``lr`` (None: the actor's) applies to these updates only; the actor's RL loss function and
    learning rate are restored afterwards.
    """
    from verl.utils import tensordict_utils as tu
    from verl.utils.dataset.dataset_utils import SFTTensorCollator
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
    from verl.workers.utils.losses import sft_loss

    from pearl_verl.train_local.runtime import get_learning_rate, set_learning_rate

    dataset = MultiTurnSFTDataset(
        str(parquet), tokenizer, OmegaConf.create({"pad_mode": "no_padding", "max_length": max_length, "truncation": "right"})
    )
    collate = SFTTensorCollator("no_padding")
    rng = np.random.default_rng(seed)
    rl_loss, rl_lr = actor.loss_fn, get_learning_rate(actor)
    actor.set_loss_fn(partial(sft_loss, config=None))
    set_learning_rate(actor, rl_lr if lr is None else lr)
    losses = []
    try:
        for _ in range(steps):
            rows = [dataset[int(i)] for i in rng.choice(len(dataset), size=min(batch_size, len(dataset)), replace=False)]
            batch = tu.get_tensordict(
                tensor_dict=collate(rows),
                non_tensor_dict={"pad_mode": "no_padding", "temperature": 1.0, "global_batch_size": len(rows)},
            )
            tu.assign_non_tensor(batch, update_lr_scheduler=False,
                                 global_token_num=tu.NonTensorData(batch["input_ids"].offsets().diff().tolist()))
            output = actor.train_batch(batch)
            losses.append(float(np.mean(tu.get(output, "metrics")["loss"])))
    finally:
        actor.set_loss_fn(rl_loss)
        set_learning_rate(actor, rl_lr)
    return losses


