"""``pearl-verl train-local``: PEARL training on one machine (CPU, or one GPU), from verl's own parts.

Each step: the ``pearl_tutor`` agent loop runs every dialogue of the batch (the policy's turns from
an HF ``generate`` rollout server, the student's from the simulator), the judge scores each
dialogue into ``reward_extra_info``, verl's estimator dispatch runs the ``pearl`` estimator on those
fields (as the ``pearl_sync`` trainer mode does), and verl's FSDP2 ``TrainingWorker`` recomputes
old log-probs and applies the GSPO update. The rollout copy of the policy then receives the new
weights. Defaults are sized for a 2-core CPU: a tiny random Qwen3-MoE, the offline student and the
offline heuristic judge with its completion gate.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pearl_verl.advantage.failure_guard import failure_cause_metrics
from pearl_verl.advantage.metrics import fallback_counts, student_fallback_metrics
from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.sources import FIXTURE_ALIAS, load_source
from pearl_verl.dialogue.episode import EpisodeRecord
from pearl_verl.dialogue.episode_runner import EpisodeLimits
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.errors import InputError
from pearl_verl.judge.reward_info import not_judged_reason, reward_info, reward_score, should_judge
from pearl_verl.judge.types import JudgeResult, TutoringJudge
from pearl_verl.local.config import LOCAL_PROBLEMS, LocalTrainConfig
from pearl_verl.local.heldout import HeldOut
from pearl_verl.local.memory import release_freed_memory
from pearl_verl.local.models import prepare_model
from pearl_verl.local.probe_judge import PROBES
from pearl_verl.local.run_outputs import write_dialogues
from pearl_verl.local.runtime import (
    build_actor,
    compose_verl_config,
    device_overrides,
    policy_state_dict,
    setup_process,
)

logger = logging.getLogger(__name__)

def resolve_dtype(setting: str, on_gpu: bool, model: str, role: str = "rollout") -> torch.dtype:
    """The dtype for ``LocalTrainConfig.rollout_dtype`` (``role="rollout"``) or ``train_dtype`` (see there)."""
    if setting != "auto":
        return getattr(torch, setting)
    if on_gpu:
        return torch.bfloat16
    if not cpu_has_native_bf16() or (role == "rollout" and model == "tiny"):
        return torch.float32  # emulated bf16 is slower than fp32; a 229K-parameter model's generation gains nothing
    return torch.bfloat16


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AVX512-BF16 or AMX): 2-3x faster prefill."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line for line in cpuinfo if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


@dataclass
class StepResult:
    """What one step produced, for logging and tests."""

    metrics: dict[str, Any]
    episodes: list[EpisodeRecord] = field(default_factory=list)


class LocalTrainer:
    """Builds everything once, then :meth:`step` runs one PEARL/GSPO step."""

    def __init__(self, config: LocalTrainConfig, judge: TutoringJudge | None = None):
        self.config = config
        self.out = Path(config.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        random.seed(config.seed)
        torch.manual_seed(config.seed)
        self.device = setup_process(config.prefer_gpu)
        model_dir = prepare_model(config.model, self.out / "model", seed=config.seed)
        self.verl_config = compose_verl_config(self._overrides(model_dir))
        from pearl_verl.verl_plugin.main_ppo import prepare

        prepare(self.verl_config)  # the same checks a cluster launch runs
        self.actor = build_actor(self.verl_config)
        self._build_rollout(model_dir)
        self._build_episode_parts(judge)
        self.samples, self.eval_samples = self._samples()
        self.step_index = 0

    def _overrides(self, model_dir: Path) -> list[str]:
        c = self.config
        prompts_per_step = c.batch_problems
        sequences = c.batch_problems * c.group_size
        return [
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.model.enable_gradient_checkpointing=False",
            "actor_rollout_ref.actor.strategy=fsdp2",
            "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False",
            "actor_rollout_ref.actor.policy_loss.loss_mode=gspo",
            "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
            "actor_rollout_ref.actor.clip_ratio_low=3e-4",
            "actor_rollout_ref.actor.clip_ratio_high=4e-4",
            "actor_rollout_ref.actor.clip_ratio_c=10.0",
            "actor_rollout_ref.actor.use_kl_loss=False",
            f"actor_rollout_ref.actor.optim.lr={c.learning_rate}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts_per_step}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={sequences}",
            "actor_rollout_ref.actor.use_dynamic_bsz=False",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={sequences}",
            f"actor_rollout_ref.rollout.n={c.group_size}",
            f"actor_rollout_ref.rollout.temperature={c.temperature}",
            f"actor_rollout_ref.rollout.prompt_length={c.prompt_length}",
            f"actor_rollout_ref.rollout.response_length={c.response_length}",
            f"data.max_prompt_length={c.prompt_length}",
            f"data.max_response_length={c.response_length}",
            f"data.train_batch_size={prompts_per_step}",
            "algorithm.adv_estimator=pearl",
            "algorithm.use_kl_in_reward=False",
            "trainer.v1.trainer_mode=pearl_sync",
            "trainer.n_gpus_per_node=1",
            f"+pearl.advantage.gamma={c.gamma}",
            f"+pearl.agent.max_tutor_turns={c.max_tutor_turns}",
            f"+pearl.agent.max_tokens_per_turn={c.max_tokens_per_turn}",
            *device_overrides(self.device, self.train_dtype_name),
        ]

    @property
    def train_dtype_name(self) -> str:
        """``train_dtype`` resolved for this device: ``bfloat16`` or ``float32``."""
        dtype = resolve_dtype(self.config.train_dtype, self.device.on_gpu, self.config.model, "train")
        return str(dtype).removeprefix("torch.")

    def _build_rollout(self, model_dir: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from pearl_verl.local.hf_server import HFGenerateServer
        from pearl_verl.verl_plugin.agent_loop import special_ids

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        dtype = resolve_dtype(self.config.rollout_dtype, self.device.on_gpu, self.config.model)
        logger.info("rollout copy in %s", dtype)
        rollout_model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(self.device.kind).eval()
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        self.server = HFGenerateServer(rollout_model, pad, special_ids(self.tokenizer)[0])
        self._weights = policy_state_dict(self.actor)
        self.server.load_weights(self._weights)
        self.hf_model_type = rollout_model.config.model_type

    def _build_episode_parts(self, judge: TutoringJudge | None) -> None:
        from pearl_verl.verl_plugin.estimator import pearl_config_from_root
        from pearl_verl.verl_plugin.simulators import simulator_for

        self.pearl_config = pearl_config_from_root(self.verl_config)
        self.simulator = simulator_for(self.pearl_config)
        if judge is None and self.config.judge in PROBES:
            from pearl_verl.local.probe_judge import ProbeJudge

            judge = ProbeJudge(PROBES[self.config.judge])
        if judge is None:
            from pearl_verl.judge.config import JudgeConfig, build_judge

            judge = build_judge(JudgeConfig(backend="offline"))
        self.judge = judge

    def _samples(self) -> tuple[list[PearlSample], list[PearlSample]]:
        """Training samples, and held-out evaluation samples (the next problems of the file)."""
        path = self.config.problems_file or LOCAL_PROBLEMS.get(self.config.problems, FIXTURE_ALIAS)
        items, _ = load_source(path, self.config.problems)
        needed = self.config.num_problems + self.config.eval_problems
        if len(items) < needed:
            raise InputError(
                f"{path} has {len(items)} problems; num_problems + eval_problems = {needed}. "
                "Lower them or pass a larger --problems-file."
            )
        rng = random.Random(self.config.seed)
        sampler = ConditionSampler(ability_mix=self.config.ability_mix)
        samples = []
        for item in items[:needed]:
            condition = sampler.sample(rng, item.misconception)
            samples.append(PearlSample(item.problem, condition, self.simulator.opening(item.problem, condition)))
        return samples[: self.config.num_problems], samples[self.config.num_problems :]

    def evaluate(self) -> HeldOut:
        """Tutor the held-out samples under each eval seed (fixed sampling and student seeds) and judge them.

        The training random state is saved and restored around it, so evaluating does not change
        the training run.
        """
        from pearl_verl.judge.batch import judgement_fields

        episodes: list[EpisodeRecord] = []
        infos: list[dict[str, Any]] = []
        judgements: list[dict[str, Any]] = []
        state = torch.get_rng_state()
        try:
            for k in range(self.config.eval_seeds):
                torch.manual_seed(self.config.seed + 10_007 + 1_000 * k)
                outputs = asyncio.run(self._rollout(self.eval_samples, tag=f"eval{k}"))
                batch = [_episode(output) for output in outputs]
                episodes += batch
                for episode, (_, info, result) in zip(batch, asyncio.run(self._judge(batch))):
                    infos.append(info)
                    judgements.append(judgement_fields(episode, result, error=not_judged_reason(episode)))
        finally:
            torch.set_rng_state(state)
        return HeldOut.of(self.step_index, self.config.eval_seeds, episodes, infos, judgements)

    def cold_start(self) -> dict[str, float]:
        """SFT on scripted-teacher dialogues before RL; returns the losses' summary."""
        from pearl_verl.local.cold_start import keep_for_pool, sft_steps, teacher_dialogues, write_sft_parquet

        c = self.config
        t0 = time.perf_counter()
        limits = EpisodeLimits(c.max_tutor_turns)
        generated = asyncio.run(teacher_dialogues(self.simulator, self.samples, c.cold_start_dialogues, limits, c.seed,
                                                  pool=c.cold_start_teachers))
        episodes = keep_for_pool(generated, c.cold_start_teachers)
        parquet = write_sft_parquet(episodes, self.out / "cold_start" / "teacher_dialogues.parquet")
        losses = sft_steps(self.actor, self.tokenizer, parquet, c.cold_start_steps, c.batch_problems * c.group_size,
                           c.prompt_length + c.response_length, c.seed, lr=c.sft_learning_rate)
        self._weights = policy_state_dict(self.actor)
        self.server.load_weights(self._weights)
        return {"cold_start/steps": len(losses), "cold_start/loss_first": losses[0], "cold_start/loss_last": losses[-1],
                "cold_start/dialogues": len(episodes), "cold_start/dialogues_dropped": len(generated) - len(episodes),
                "time/cold_start_s": time.perf_counter() - t0}

    def step(self) -> StepResult:
        """One training step; returns its metrics and the step's dialogues."""
        c = self.config
        start = len(self.samples) and (self.step_index * c.batch_problems) % len(self.samples)
        batch = [self.samples[(start + i) % len(self.samples)] for i in range(c.batch_problems)]
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        outputs = asyncio.run(self._rollout(batch))
        timings["time/rollout_s"] = time.perf_counter() - t0
        episodes = [_episode(output) for output in outputs]
        t0 = time.perf_counter()
        scores, infos, results = zip(*asyncio.run(self._judge(episodes)))
        timings["time/judge_s"] = time.perf_counter() - t0
        uids = np.array([f"step{self.step_index}-{i // c.group_size}" for i in range(len(outputs))], dtype=object)
        metrics: dict[str, Any] = {}
        t0 = time.perf_counter()
        update, advantages = self._update(outputs, list(infos), uids, metrics)
        timings["time/update_s"] = time.perf_counter() - t0
        self._write_dialogues(uids, episodes, results, scores, infos, advantages)
        weights = policy_state_dict(self.actor)
        metrics["actor/param_change"] = _distance(self._weights, weights)
        self._weights = weights
        self.server.load_weights(weights)
        self.step_index += 1
        scored = [s for s, info in zip(scores, infos) if info["judge_ok"]]
        metrics.update(update)
        metrics.update(failure_cause_metrics([e.end_reason for e in episodes], [info["judge_ok"] for info in infos]))
        metrics.update(student_fallback_metrics([fallback_counts(e.student_trace) for e in episodes]))
        metrics.update(timings)
        metrics.update(
            {
                "step": self.step_index,
                "reward/mean": float(np.mean(scored)) if scored else float("nan"),
                "rollout/response_tokens": int(sum(len(o.response_ids) for o in outputs)),
                "end_reasons": dict(Counter(e.end_reason for e in episodes)),
            }
        )
        return StepResult(metrics, episodes)

    async def _rollout(self, batch: list[PearlSample], tag: str | None = None) -> list[Any]:
        from verl.experimental.agent_loop.agent_loop import DictConfigWrap

        from pearl_verl.verl_plugin.agent_loop import PearlTutorAgentLoop

        sampling = {"temperature": self.config.temperature, "top_p": 1.0, "top_k": -1}

        async def one(sample: PearlSample, group: int, member: int) -> Any:
            loop = PearlTutorAgentLoop(
                trainer_config=DictConfigWrap(self.verl_config),
                server_manager=self.server,
                tokenizer=self.tokenizer,
                processor=None,
                dataset_cls=None,
                data_config=DictConfigWrap(self.verl_config.data),
                hf_model_type=self.hf_model_type,
            )
            uid = f"{tag or f'step{self.step_index}'}-{group}"  # eval students repeat across evaluations
            row = {"raw_prompt": sample.to_prompt(), "extra_info": sample.to_extra_info(),
                   "uid": uid, "session_id": member, "global_steps": self.step_index}
            return await loop.run(dict(sampling), **row)

        jobs = [one(s, g, m) for g, s in enumerate(batch) for m in range(self.config.group_size)]
        return await asyncio.gather(*jobs)

    async def _judge(self, episodes: list[EpisodeRecord]) -> list[tuple[float, dict[str, Any], JudgeResult | None]]:
        async def one(episode: EpisodeRecord) -> tuple[float, dict[str, Any], JudgeResult | None]:
            result = await self.judge.judge(episode) if should_judge(episode) else None
            info = reward_info(episode, result)
            return reward_score(info), info, result

        return await asyncio.gather(*(one(e) for e in episodes))

    def _update(
        self, outputs: list[Any], infos: list[dict[str, Any]], uids: np.ndarray, metrics: dict
    ) -> tuple[dict[str, Any], torch.Tensor]:
        from pearl_verl.local.batch import advantages_for, policy_update

        advantages = advantages_for(self.verl_config, outputs, infos, uids, metrics)
        return policy_update(self.actor, self.verl_config, outputs, advantages), advantages

    def _write_dialogues(self, uids: np.ndarray, episodes: Sequence[EpisodeRecord], results: Sequence[Any],
                         scores: Sequence[float], infos: Sequence[dict[str, Any]], advantages: torch.Tensor) -> None:
        """``dialogues/step_NNNN.jsonl``: each dialogue, its judgement, shaped rewards and advantage (``view``)."""
        from pearl_verl.advantage.inputs import shaped_rewards
        from pearl_verl.judge.batch import judgement_fields
        from pearl_verl.verl_plugin.estimator import pearl_config_from_root

        shaped = shaped_rewards(list(infos), uids, pearl_config_from_root(self.verl_config).advantage)
        rows = [
            {"step": self.step_index + 1, "uid": str(uid), "episode": episode.to_dict(),
             "judge": judgement_fields(episode, result, error=not_judged_reason(episode)),
             "reward": float(score) if info["judge_ok"] else None, "shaped": shaped[i],
             "advantage": float(advantages[i])}
            for i, (uid, episode, result, score, info) in enumerate(zip(uids, episodes, results, scores, infos))
        ]
        write_dialogues(self.out, self.step_index + 1, rows)

    def save(self) -> Path:
        """Checkpoint the actor (verl's checkpoint manager) and the loop position."""
        path = self.out / "checkpoints" / f"global_step_{self.step_index}"
        self.actor.save_checkpoint(str(path), global_step=self.step_index)
        (path / "pearl_local_state.json").write_text(json.dumps({"step": self.step_index, "config": asdict(self.config)}))
        torch.save(torch.get_rng_state(), path / "pearl_rng_state.pt")  # rollout sampling continues as it would have
        return path

    def resume(self) -> int:
        """Continue from the latest checkpoint in ``out_dir``; returns the step reached (0 if none)."""
        checkpoints = sorted(
            (p for p in (self.out / "checkpoints").glob("global_step_*") if (p / "pearl_local_state.json").exists()),
            key=lambda p: int(p.name.rsplit("_", 1)[1]),
        )
        if not checkpoints:
            return 0
        latest = checkpoints[-1]
        self.actor.load_checkpoint(str(latest))
        self.step_index = json.loads((latest / "pearl_local_state.json").read_text())["step"]
        torch.set_rng_state(torch.load(latest / "pearl_rng_state.pt"))
        self._weights = policy_state_dict(self.actor)
        self.server.load_weights(self._weights)
        logger.info("resumed from %s at step %d", latest, self.step_index)
        return self.step_index


def _distance(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> float:
    """L2 norm of the parameter change of one update (0.0 would mean the step trained nothing)."""
    return float(torch.sqrt(sum(((after[k].float() - before[k].float()) ** 2).sum() for k in after)))


def _episode(output: Any) -> EpisodeRecord:
    from pearl_verl.verl_plugin.agent_loop import episode_from_extra_fields

    episode = episode_from_extra_fields(output.extra_fields)
    assert episode is not None, "the pearl_tutor agent loop always stores its episode"
    return episode


def run_training(
    config: LocalTrainConfig, resume: bool = False, judge: TutoringJudge | None = None, progress_file: Any = None
) -> list[dict[str, Any]]:
    """Train for ``config.steps`` steps (continuing from the latest checkpoint when ``resume``).

    Writes under ``out_dir``: ``metrics.jsonl`` (one line per step and per evaluation, appended as
    it goes), ``heldout.jsonl`` (every held-out dialogue of every evaluation), ``curves.png``,
    ``dialogues.md`` (held-out dialogues where RL started and at the last step), ``summary.txt``
    and checkpoints. Prints a progress bar to ``progress_file`` (default: stderr).

    Returns:
        The metrics of every step of the run directory, earlier runs included when resuming.
    """
    from tqdm import tqdm

    from pearl_verl.advantage.failure_guard import FailureGuard, TrainingStalled
    from pearl_verl.local.heldout import append_heldout, read_heldout
    from pearl_verl.local.run_outputs import append_metrics, plot_curves, read_metrics
    from pearl_verl.verl_plugin.estimator import pearl_config_from_root

    trainer = LocalTrainer(config, judge=judge)
    metrics_path, heldout_path = trainer.out / "metrics.jsonl", trainer.out / "heldout.jsonl"
    start = trainer.resume() if resume else 0
    if not resume:
        for stale in (metrics_path, heldout_path, trainer.out / "summary.txt", trainer.out / "dialogues.md"):
            stale.unlink(missing_ok=True)  # a fresh run starts fresh logs
    rows = [row for row in read_metrics(metrics_path) if row["step"] <= start]

    def evaluate(row: dict[str, Any]) -> None:
        t0 = time.perf_counter()
        held = trainer.evaluate()
        row.update(held.metrics(), **{"time/eval_s": time.perf_counter() - t0})
        append_heldout(heldout_path, held, row.get("phase", "train"))
        release_freed_memory()

    if start == 0 and config.eval_problems and not config.cold_start_steps:
        first = {"step": 0, "phase": "initial"}
        evaluate(first)
        append_metrics(metrics_path, first)
        rows.append(first)
    if start == 0 and config.cold_start_steps:
        cold = {"step": 0, "phase": "cold_start", **trainer.cold_start()}
        if config.eval_problems:
            evaluate(cold)
        append_metrics(metrics_path, cold)
        rows.append(cold)
    guard = FailureGuard(pearl_config_from_root(trainer.verl_config).failure_guard, resume="rerun with --resume")
    progress = tqdm(range(start, config.steps), initial=start, total=config.steps, desc="train-local", unit="step",
                    file=progress_file)
    for _ in progress:
        result = trainer.step()
        release_freed_memory()
        try:
            guard.update(result.metrics, trainer.step_index)
        except TrainingStalled:
            append_metrics(metrics_path, result.metrics)
            trainer.save()
            raise
        if config.eval_problems and (trainer.step_index % config.eval_every == 0 or trainer.step_index == config.steps):
            evaluate(result.metrics)
        append_metrics(metrics_path, result.metrics)
        rows.append(result.metrics)
        progress.set_postfix(
            reward=f"{result.metrics['reward/mean']:.3f}",
            eval=f"{result.metrics.get('eval/reward/mean', float('nan')):.3f}",
            turns=f"{result.metrics.get('pearl/episode/tutor_turns/mean', float('nan')):.1f}",
            loss=f"{result.metrics.get('actor/pg_loss', float('nan')):+.3f}",
        )
        if trainer.step_index % config.save_every == 0 or trainer.step_index == config.steps:
            trainer.save()
    progress.close()
    plot_curves(rows, trainer.out / "curves.png", f"pearl-verl train-local ({config.model}, seed {config.seed})")
    _write_summary(trainer.out, read_heldout(heldout_path))
    return rows


def _write_summary(out: Path, evaluations: list[tuple[str, HeldOut]]) -> None:
    """summary.txt and dialogues.md from the evaluation RL started from and the last one."""
    from pearl_verl.local.heldout import summary, write_dialogues

    rl_start = [held for phase, held in evaluations if phase in ("initial", "cold_start")]
    if not rl_start or evaluations[-1][1] is rl_start[-1]:
        return
    before, after = rl_start[-1], evaluations[-1][1]
    (out / "summary.txt").write_text(summary(before, after) + "\n", encoding="utf-8")
    write_dialogues(out / "dialogues.md", before, after)
