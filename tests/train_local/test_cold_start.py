"""The cold-start stage's data path: scripted-teacher dialogues -> gen-sft filters -> verl's SFT dataset."""

import asyncio
import random

import pandas as pd
import pytest

from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.sources import load_source
from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.sft.dataset import COLUMNS
from pearl_verl.student.factory import build_simulator
from pearl_verl.student.student_config import StudentConfig
from pearl_verl.train_local.cold_start import keep_for_pool, keep_for_sft, teacher_dialogues, write_sft_parquet
from pearl_verl.tutor.styles import TEACHER_POOLS
from pearl_verl.tutor.tutor_prompts import END_MARKER


def _samples(simulator, n=3):
    items, _ = load_source("@fixture", "gsm8k", limit=n)
    sampler, rng = ConditionSampler(), random.Random(0)
    samples = []
    for item in items:
        condition = sampler.sample(rng, item.misconception)
        samples.append(PearlSample(item.problem, condition, simulator.opening(item.problem, condition)))
    return samples


def test_teacher_dialogues_become_verl_sft_rows_that_train_only_the_tutor(tmp_path):
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from pearl_verl.models.tiny import build_offline_tokenizer

    simulator = build_simulator(StudentConfig(backend="offline"))
    samples = _samples(simulator)
    episodes = asyncio.run(teacher_dialogues(simulator, samples, 2, EpisodeLimits(8), seed=0))
    assert len(episodes) == 6 and {e.problem.problem_id for e in episodes} == {s.problem.problem_id for s in samples}
    again = asyncio.run(teacher_dialogues(simulator, samples, 2, EpisodeLimits(8), seed=0))
    assert [e.turns for e in again] == [e.turns for e in episodes]  # seeded: reproducible runs

    kept = keep_for_sft(episodes)
    assert kept and all(e.ended_normally for e in kept)
    path = write_sft_parquet(kept, tmp_path / "cold_start")
    assert path == tmp_path / "cold_start" / "train.parquet"
    written = pd.read_parquet(path)  # gen-sft's format, by gen-sft's writer
    assert tuple(written.columns) == COLUMNS and list(written["tutor_turns"]) == [e.tutor_turns for e in kept]

    tokenizer = build_offline_tokenizer(tmp_path / "tok")
    dataset = MultiTurnSFTDataset(str(path), tokenizer, {"max_length": 4096, "pad_mode": "no_padding"})
    assert len(dataset) == len(kept)
    item = dataset[0]
    trained = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
    tutor_turns = [t.text for t in kept[0].turns if t.role == TUTOR]
    student_turns = [t.text for t in kept[0].turns if t.role == STUDENT]
    assert all(text in trained for text in tutor_turns)
    assert not any(text in trained for text in student_turns[1:])  # loss on the tutor's turns only
    if kept[0].end_reason == "tutor_ended":
        assert END_MARKER in trained  # the model learns to close a session


def test_keep_for_sft_refuses_when_nothing_passes(make_episode):
    unfinished = make_episode(["I don't get this problem.", "What do you know so far?"], "turn_limit")
    with pytest.raises(ValueError, match="incomplete"):
        keep_for_sft([unfinished, unfinished])


@pytest.mark.parametrize("pool, styles", [("mixed", 3), ("mixed-blame", 4)])
def test_a_mixed_pool_teaches_every_style_and_keeps_unfinished_dialogues(pool, styles, make_episode):
    simulator = build_simulator(StudentConfig(backend="offline"))
    samples = _samples(simulator, 2)
    episodes = asyncio.run(teacher_dialogues(simulator, samples, styles, EpisodeLimits(6), seed=0, pool=pool))
    openings = [next(t.text for t in e.turns if t.role == TUTOR) for e in episodes]
    assert len(set(openings)) == len(TEACHER_POOLS[pool]) == styles  # each problem meets every teacher once
    assert openings[:styles] == openings[styles:]  # teachers in turn, the same order for every problem
    assert any("wrong" in text for text in openings) == (pool == "mixed-blame")  # the default pool never blames
    kept = keep_for_pool(episodes, pool)
    assert kept == episodes and any(not e.ended_normally for e in kept)  # unfinished styles stay: RL must tell them apart
    failed = make_episode(turns=episodes[0].turns, end_reason="student_error", problem=samples[0].problem,
                          condition=samples[0].condition, trace=())
    assert keep_for_pool([failed, episodes[0]], pool) == [episodes[0]]  # failed backends never become SFT data
    with pytest.raises(ValueError, match="unknown-pool|not one of"):
        asyncio.run(teacher_dialogues(simulator, samples, 1, EpisodeLimits(2), seed=0, pool="unknown-pool"))


def test_hand_over_moves_the_sft_checkpoint_to_rls_step_0_with_rls_rate_and_adams_moments(tmp_path):
    """The SFT trainer's checkpoint becomes RL's: the same weights and Adam moments, RL's rate, RL's schedule
    from its step 0, and none of the SFT dataloader's state."""
    import torch

    from pearl_verl.train_local.cold_start import hand_over

    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    for _ in range(3):  # three SFT steps at the SFT's rate
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
        scheduler.step()
    sft = tmp_path / "sft" / "global_step_3"
    (sft / "huggingface").mkdir(parents=True)
    (sft / "huggingface" / "config.json").write_text("{}")
    torch.save(model.state_dict(), sft / "model_world_size_1_rank_0.pt")
    torch.save(optimizer.state_dict(), sft / "optim_world_size_1_rank_0.pt")
    rng = torch.get_rng_state()
    torch.save({"lr_scheduler": scheduler.state_dict(), "rng": {"cpu": rng}}, sft / "extra_state_world_size_1_rank_0.pt")
    torch.save({"dataloader": 3}, sft / "data_0.pt")

    actor = hand_over(sft, tmp_path / "checkpoints" / "global_step_0" / "actor", lr=2.5e-3)
    assert sorted(p.name for p in actor.iterdir()) == [
        "extra_state_world_size_1_rank_0.pt", "huggingface", "model_world_size_1_rank_0.pt",
        "optim_world_size_1_rank_0.pt"]
    assert not actor.with_name("actor.tmp").exists()

    rl_model = torch.nn.Linear(3, 2)
    rl_optimizer = torch.optim.AdamW(rl_model.parameters(), lr=2.5e-3)
    rl_scheduler = torch.optim.lr_scheduler.LambdaLR(rl_optimizer, lambda step: 1.0)
    rl_model.load_state_dict(torch.load(actor / "model_world_size_1_rank_0.pt"))
    rl_optimizer.load_state_dict(torch.load(actor / "optim_world_size_1_rank_0.pt"))
    extra = torch.load(actor / "extra_state_world_size_1_rank_0.pt", weights_only=False)
    rl_scheduler.load_state_dict(extra["lr_scheduler"])
    assert torch.equal(rl_model.weight, model.weight)
    moments = optimizer.state_dict()["state"][0]
    assert torch.equal(rl_optimizer.state_dict()["state"][0]["exp_avg"], moments["exp_avg"])  # Adam goes on
    assert rl_scheduler.last_epoch == 0
    rl_model(torch.ones(1, 3)).sum().backward()
    rl_optimizer.step()
    rl_scheduler.step()
    assert [g["lr"] for g in rl_optimizer.param_groups] == [2.5e-3] == rl_scheduler.get_last_lr()
    assert torch.equal(extra["rng"]["cpu"], rng)
