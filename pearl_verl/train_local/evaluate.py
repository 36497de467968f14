"""Held-out evaluation of a local run's policy: the tutor's dialogues on problems it never trains on.

The policy (a Hugging Face model directory: the starting model, or the export of one of verl's
checkpoints) tutors the held-out samples through the same ``pearl_tutor`` agent loop as training,
in this process, on an HF ``generate`` server, under each eval seed: fixed sampling seeds and fixed
students, so two evaluations of a run compare dialogue for dialogue. The judge scores each dialogue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.judge.reward_info import not_judged_reason, reward_info, should_judge
from pearl_verl.judge.types import TutoringJudge
from pearl_verl.train_local.heldout import HeldOut
from pearl_verl.verl_plugin.cpu.memory import release_freed_memory

EVAL_SEED_OFFSET = 10_007
"""Eval seed k samples with seed + EVAL_SEED_OFFSET + 1000 k: apart from every training seed."""


class HeldOutEvaluator:
    """Tutors ``samples`` ``group_size`` times under each of ``eval_seeds`` seeds, and judges them."""

    def __init__(self, verl_config: DictConfig, samples: Sequence[PearlSample], judge: TutoringJudge, *,
                 group_size: int, eval_seeds: int, seed: int, temperature: float, dtype: torch.dtype) -> None:
        self.verl_config = verl_config
        self.samples = list(samples)
        self.judge = judge
        self.group_size = group_size
        self.eval_seeds = eval_seeds
        self.seed = seed
        self.temperature = temperature
        self.dtype = dtype

    def evaluate(self, model_dir: Path, step: int) -> HeldOut:
        """The policy in ``model_dir`` (its weights at training step ``step``) on the held-out samples."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from pearl_verl.judge.batch import judgement_fields
        from pearl_verl.verl_plugin.agent_loop import special_ids
        from pearl_verl.verl_plugin.cpu.hf_server import HFGenerateServer

        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=self.dtype).eval()
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        server = HFGenerateServer(model, pad, special_ids(tokenizer)[0])
        episodes: list[EpisodeRecord] = []
        infos: list[dict[str, Any]] = []
        judgements: list[dict[str, Any]] = []
        state = torch.get_rng_state()
        try:
            for k in range(self.eval_seeds):
                torch.manual_seed(self.seed + EVAL_SEED_OFFSET + 1_000 * k)
                outputs = asyncio.run(self._rollout(server, tokenizer, model.config.model_type, f"eval{k}", step))
                batch = [_episode(output) for output in outputs]
                episodes += batch
                for episode, (info, result) in zip(batch, asyncio.run(self._judge(batch))):
                    infos.append(info)
                    judgements.append(judgement_fields(episode, result, error=not_judged_reason(episode)))
        finally:
            torch.set_rng_state(state)
            del server, model
            release_freed_memory()
        return HeldOut.of(step, self.eval_seeds, episodes, infos, judgements)

    async def _rollout(self, server: Any, tokenizer: Any, model_type: str, tag: str, step: int) -> list[Any]:
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap

        from pearl_verl.verl_plugin.agent_loop import PearlTutorAgentLoop

        sampling = {"temperature": self.temperature, "top_p": 1.0, "top_k": -1}

        async def one(sample: PearlSample, group: int, member: int) -> Any:
            loop = PearlTutorAgentLoop(
                trainer_config=DictConfigWrap(self.verl_config),
                server_manager=server,
                tokenizer=tokenizer,
                processor=None,
                dataset_cls=None,
                data_config=DictConfigWrap(self.verl_config.data),
                hf_model_type=model_type,
            )
            row = {"raw_prompt": sample.to_prompt(), "extra_info": sample.to_extra_info(),
                   "uid": f"{tag}-{group}", "session_id": member, "global_steps": step}
            return await loop.run(dict(sampling), **row)

        jobs = [one(s, g, m) for g, s in enumerate(self.samples) for m in range(self.group_size)]
        return await asyncio.gather(*jobs)

    async def _judge(self, episodes: list[EpisodeRecord]) -> list[tuple[dict[str, Any], Any]]:
        async def one(episode: EpisodeRecord) -> tuple[dict[str, Any], Any]:
            result = await self.judge.judge(episode) if should_judge(episode) else None
            return reward_info(episode, result), result

        return await asyncio.gather(*(one(e) for e in episodes))


def _episode(output: Any) -> EpisodeRecord:
    from pearl_verl.verl_plugin.agent_loop import episode_from_extra_fields

    episode = episode_from_extra_fields(output.extra_fields)
    assert episode is not None, "the pearl_tutor agent loop always stores its episode"
    return episode
