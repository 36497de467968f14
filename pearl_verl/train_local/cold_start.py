"""The cold-start stage of a local run (paper §3.3.1, in miniature): SFT on teacher dialogues.

The paper first fine-tunes the tutor on dialogues a strong teacher (DeepSeek-V3.2) holds with the
simulator, then runs RL. Locally the teachers are scripted tutors (test doubles for a teacher model)
talking with the same simulated students; the dialogues go through verl's own SFT trainer, as the
cluster's cold-start recipe runs it (the ``pearl_sft`` config, here ``pearl_sft_cpu``: verl's multi-turn
SFT dataset, loss on the tutor's turns only, FSDP2), and RL resumes its checkpoint
(:func:`hand_over`). Two pools (:data:`pearl_verl.tutor.styles.TEACHER_POOLS`):

- ``mixed`` (train-local's default): three teachers of distinct styles (coaching, lecturing,
  terse), one per dialogue in turn, unfiltered, so the tiny model starts RL able to write several
  styles and RL selects among them by the judge; ``mixed-blame`` adds a blaming teacher;
- ``socratic``: the scripted Socratic teacher alone, filtered as ``pearl-verl gen-sft`` filters
  (:func:`pearl_verl.sft.filters.drop_reason`: completed, no answer leak, ...), the paper's recipe
  (its problem-specific messages are beyond the tiny model; use it with a pretrained one).

A pretrained model's cold start imitates people instead: ``mathdial``, MathDial's human teachers on problems other
than the run's (:mod:`pearl_verl.sft.mathdial_teachers`).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits, policy_step, run_episode
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.dialogue.student_contract import StudentSimulator
from pearl_verl.dialogue.tutor_contract import TutorPolicy
from pearl_verl.errors import InputError
from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS
from pearl_verl.sft.dataset import sft_messages, sft_row, write_sft
from pearl_verl.sft.filters import FilterConfig, drop_reason
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


def write_sft_parquet(episodes: list[EpisodeRecord], folder: Path) -> Path:
    """The teacher dialogues as ``folder/train.parquet``, written as gen-sft writes its SFT set (one ``messages``
    list per row, verl's multi-turn SFT format, and where each came from)."""
    rows = [sft_row(f"cold-start-{i:04d}", episode, sft_messages(episode)) for i, episode in enumerate(episodes)]
    return write_sft({"train": rows}, folder)[0]


def sft_overrides(*, parquet: Path, model: Path, out: Path, steps: int, batch_size: int, micro_batch_size: int,
                  max_length: int, lr: float, seed: int, mixed_precision: list[str]) -> list[str]:
    """The run's settings for verl's SFT trainer, on top of the ``pearl_sft_cpu`` config: ``steps`` updates of
    ``batch_size`` dialogues (the data is shuffled anew each epoch), checkpoint and Hugging Face export in
    ``out/checkpoints/global_step_<steps>`` (a fresh run: nothing is resumed there)."""
    return [
        f"data.train_files={parquet}",
        "data.val_files=null",
        f"data.train_batch_size={batch_size}",
        f"data.micro_batch_size_per_gpu={micro_batch_size}",
        f"data.max_length={max_length}",
        "data.truncation=right",  # the tiny model's budget is the RL stage's; a longer teacher dialogue is cut
        f"model.path={model}",
        f"optim.lr={lr}",
        f"trainer.seed={seed}",
        f"engine.seed={seed}",
        f"trainer.total_training_steps={steps}",
        "trainer.total_epochs=1000",  # the step count ends the run
        "trainer.save_freq=-1",  # the last step is saved anyway
        "trainer.test_freq=-1",
        "trainer.resume_mode=disable",
        f"trainer.default_local_dir={out / 'checkpoints'}",
        "trainer.logger=['file']",
        "trainer.project_name=pearl_verl",
        "trainer.experiment_name=train-local-cold-start",
        "trainer.n_gpus_per_node=1",
        *mixed_precision,
    ]


def hand_over(sft_step: Path, actor: Path, lr: float) -> Path:
    """Move the SFT trainer's last checkpoint ``sft_step`` to ``actor`` (verl's RL checkpoint of step 0), where RL
    resumes it with learning rate ``lr`` and its own schedule from step 0.

    Both are verl's FSDP engine checkpoints (weights, optimizer, scheduler and RNG, the Hugging Face export), so RL
    continues the cold start's Adam moments, as one actor would (measured: with a fresh optimizer the training
    reward fell from 0.85 to 0.14 in 20 steps). The optimizer's and the scheduler's saved rates are the SFT's;
    they are set to RL's here. The SFT dataloader's state stays behind: RL has its own data.
    """
    import shutil

    import torch

    tmp = actor.with_name(actor.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for item in sorted(sft_step.iterdir()):
        if item.name.startswith("data_"):
            continue
        if item.name.startswith(("optim_", "extra_state_")):
            state = torch.load(item, map_location="cpu", weights_only=False)
            _set_rate(state, lr)
            torch.save(state, tmp / item.name)
        else:
            shutil.move(item, tmp / item.name)
    if actor.exists():
        shutil.rmtree(actor)
    tmp.replace(actor)  # whole or absent: a resumed run trusts what it finds
    return actor


def _set_rate(state: dict[str, Any], lr: float) -> None:
    """RL's rate in a saved optimizer (``param_groups``) or extra state (``lr_scheduler``, restarted at step 0)."""
    for group in state.get("param_groups", ()):
        group["lr"] = lr
        if "initial_lr" in group:
            group["initial_lr"] = lr
    scheduler = state.get("lr_scheduler")
    if scheduler:
        scheduler["base_lrs"] = [lr] * len(scheduler["base_lrs"])
        scheduler["_last_lr"] = [lr] * len(scheduler["base_lrs"])
        scheduler["last_epoch"], scheduler["_step_count"] = 0, 1
