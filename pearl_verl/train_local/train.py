"""``pearl-verl train-local``: PEARL training on this machine's CPU, through verl's own trainer.

The stages, each picked up where it stopped by ``--resume`` (RL from its last checkpoint, or from the cold start's
when it stopped before its first):

1. the tutor model (``tiny``, ``smollm2`` or a directory) in ``out/model``;
2. the cold start: SFT on scripted-teacher dialogues through verl's SFT trainer (a child process, as the
   cluster's cold-start recipe runs it), handed over as verl's step-0 checkpoint that RL resumes;
3. RL through verl's ``main_ppo`` (Ray, TransferQueue, FSDP2, the ``hf`` rollout, the pearl_tutor
   agent loop, the pearl_judge reward loop, the pearl estimator in ``pearl_sync`` mode, GSPO, verl's
   weight sync) as a child process (:mod:`pearl_verl.train_local.verl_run`): the path a cluster runs.
   Its validation is the held-out evaluation (:mod:`pearl_verl.train_local.heldout`): of the policy RL
   starts from, every ``eval_every`` steps and at the last;
4. ``summary.txt``, ``dialogues.md``, ``dialogues/`` and ``curves.png`` from all of it.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

import torch

from pearl_verl.advantage.advantage_config import AdvantageConfig
from pearl_verl.data.conditions import ConditionSampler
from pearl_verl.data.sources import FIXTURE_ALIAS, load_source
from pearl_verl.dialogue.sample import PearlSample
from pearl_verl.errors import InputError
from pearl_verl.models.prepare import prepare_model
from pearl_verl.row_kinds import stamped
from pearl_verl.sft.mathdial_teachers import HUMAN_POOL
from pearl_verl.train_local.heldout import OBSERVABLES, HeldOut, append_heldout, read_heldout
from pearl_verl.train_local.local_config import LOCAL_PROBLEMS, MIN_LR_RATIO, LocalTrainConfig
from pearl_verl.train_local.precision import RL_ENGINE, SFT_ENGINE, dtype_name, resolve_dtype, train_overrides
from pearl_verl.train_local.run_outputs import append_metrics, plot_curves, read_metrics, write_step_dialogues
from pearl_verl.train_local.runtime import compose_verl_config
from pearl_verl.train_local.verl_run import checkpoint_dir, hf_export, validation_overrides
from pearl_verl.write_whole import write_whole

logger = logging.getLogger(__name__)

RESUME_HINT = "rerun with --resume"


def train_precision(config: LocalTrainConfig, engine: str = RL_ENGINE) -> list[str]:
    """The update's precision overrides for the FSDP engine at ``engine`` (RL's actor or the cold start's SFT)."""
    return train_overrides(config.train_dtype, engine)


def algorithm_overrides(config: LocalTrainConfig) -> list[str]:
    """verl settings of the run's sizes, seeds, PEARL's knobs and the update's precision.

    The method itself (GSPO's loss and clip, the pearl estimator, the agent loop and judge) and the CPU's
    engine settings come from the ``pearl_gspo_cpu`` config that the CPU recipe reads too. The whole batch
    is one mini-batch, so one GSPO update a step, on-policy; its micro-batches (``micro_batch``) only bound
    memory.
    """
    c = config
    return [
        f"actor_rollout_ref.actor.optim.lr={c.learning_rate}",
        f"actor_rollout_ref.actor.optim.lr_scheduler_type={c.lr_schedule}",
        *([f"actor_rollout_ref.actor.optim.min_lr_ratio={MIN_LR_RATIO}"] if c.lr_schedule == "cosine" else []),
        f"actor_rollout_ref.actor.ppo_mini_batch_size={c.batch_problems}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={c.micro_batch_size}",
        "actor_rollout_ref.actor.use_dynamic_bsz=False",
        f"actor_rollout_ref.rollout.n={c.group_size}",
        f"actor_rollout_ref.rollout.temperature={c.temperature}",
        f"actor_rollout_ref.rollout.top_k={c.top_k or -1}",
        f"data.seed={c.seed}",
        f"data.max_prompt_length={c.prompt_length}",
        f"data.max_response_length={c.response_length}",
        f"data.train_batch_size={c.batch_problems}",
        "trainer.n_gpus_per_node=1",
        *([f"+pearl.advantage.gamma={c.gamma}"] if c.gamma != AdvantageConfig.gamma else []),  # else the method's
        f"+pearl.agent.max_tutor_turns={c.max_tutor_turns}",
        f"+pearl.agent.max_tokens_per_turn={c.max_tokens_per_turn}",
        *train_precision(c),
    ]


def draw_samples(config: LocalTrainConfig, simulator: Any) -> tuple[list[PearlSample], list[PearlSample]]:
    """The run's training samples, and its held-out samples (the next problems of the file), each with a
    student condition drawn from ``config.seed`` in file order and the simulator's opening."""
    c = config
    path = c.problems_file or LOCAL_PROBLEMS.get(c.problems, FIXTURE_ALIAS)
    items, _ = load_source(path, c.problems)
    needed = c.num_problems + c.eval_problems
    if len(items) < needed:
        raise InputError(
            f"{path} has {len(items)} problems; num_problems + eval_problems = {needed}. "
            "Lower them or pass a larger --problems-file."
        )
    rng = random.Random(c.seed)
    sampler = ConditionSampler(ability_mix=c.ability_mix)
    samples = []
    for item in items[:needed]:
        condition = sampler.sample(rng, item.misconception)
        samples.append(PearlSample(item.problem, condition, simulator.opening(item.problem, condition)))
    return samples[: c.num_problems], samples[c.num_problems :]


class LocalRun:
    """A run directory and everything built once for it: settings, samples, data."""

    def __init__(self, config: LocalTrainConfig, extra_overrides: list[str] = ()):
        from pearl_verl.verl_plugin.adv_estimator import pearl_config_from_root
        from pearl_verl.verl_plugin.cpu.platform import install_host_cpu_platform
        from pearl_verl.verl_plugin.main_ppo import prepare
        from pearl_verl.verl_plugin.shared_simulator import simulator_for

        self.config = config
        self.out = Path(config.out_dir).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.extra_overrides = list(extra_overrides)
        random.seed(config.seed)
        torch.manual_seed(config.seed)
        install_host_cpu_platform()  # the checks below read verl's device from it
        self.model_dir = prepare_model(config.model, self.out / "model", seed=config.seed).resolve()
        self.cold_start_checkpoint = checkpoint_dir(self.out, 0)
        self.cold_start_dir = hf_export(self.out, 0)
        self.policy_dir = self.cold_start_dir if config.cold_start_steps else self.model_dir
        self.rollout_dtype = resolve_dtype(config.rollout_dtype, config.model)
        try:
            self.verl_config = compose_verl_config(self.overrides())
        except Exception as exc:  # Hydra's and omegaconf's errors name the override they could not apply
            if type(exc).__module__.split(".")[0] not in ("hydra", "omegaconf"):
                raise
            raise InputError(f"verl's config rejected the run's overrides: {exc}") from exc
        prepare(self.verl_config)  # the checks main_ppo runs, here before any work
        self.simulator = simulator_for(pearl_config_from_root(self.verl_config))
        self.samples, self.eval_samples = draw_samples(config, self.simulator)

    def overrides(self, resume_from: int = 0) -> list[str]:
        """Every verl override of the RL stage: the algorithm's, the run's, then the user's.

        ``resume_from``: continue from verl's checkpoint of that step (:func:`resume_point`, named, not verl's
        latest); 0: RL starts from the cold start's checkpoint (weights and optimizer state) when there is one, else
        from the model, and its validation first evaluates that policy.
        """
        from pearl_verl.train_local.verl_run import rl_overrides

        c = self.config
        # step 0's checkpoint is the cold start's hand-over
        start = str(checkpoint_dir(self.out, resume_from)) if resume_from or c.cold_start_steps else "disable"
        return [
            *algorithm_overrides(c),
            *rl_overrides(out=self.out, policy=self.policy_dir, data=self.out / "data", steps=c.steps,
                          save_freq=c.save_every, start=start, judge=c.judge,
                          rollout_dtype=dtype_name(self.rollout_dtype), rollout=c.rollout),
            *validation_overrides(folder=self.out / "validation", problems=c.eval_problems,
                                  dialogues_per_problem=c.group_size * c.eval_seeds, every=c.eval_every,
                                  before_training=not resume_from),
            *self.extra_overrides,
        ]

    def write_data(self) -> None:
        """``out/data/{train,val}.parquet`` in verl's schema: the training and the held-out samples."""
        from pearl_verl.data.prepare import verl_row, write_rows

        for split, samples in (("train", self.samples), ("val", self.eval_samples or self.samples[:1])):
            write_rows([verl_row(s, split, i) for i, s in enumerate(samples)], self.out / "data" / f"{split}.parquet")

    def cold_start(self, log: TextIO) -> dict[str, float]:
        """SFT on teacher dialogues (scripted teachers with the run's students, or MathDial's human teachers) through
        verl's SFT trainer (its output appended to ``log``), handed over as RL's step-0 checkpoint, whose Hugging Face
        export is ``cold_start_dir``. Returns its summary."""
        from pearl_verl.async_run import run_async
        from pearl_verl.dialogue.episode_runner import EpisodeLimits
        from pearl_verl.train_local.cold_start import (
            hand_over,
            keep_for_pool,
            sft_overrides,
            teacher_dialogues,
            write_sft_parquet,
        )
        from pearl_verl.train_local.verl_run import run_sft

        c = self.config
        t0 = time.perf_counter()
        folder = self.out / "cold_start"
        if c.cold_start_teachers == HUMAN_POOL:
            parquet, kept, dropped = _human_teacher_set(self, folder)
        else:
            generated = run_async(teacher_dialogues(self.simulator, self.samples, c.cold_start_dialogues,
                                                    EpisodeLimits(c.max_tutor_turns), c.seed, pool=c.cold_start_teachers))
            episodes = keep_for_pool(generated, c.cold_start_teachers)
            parquet, kept, dropped = write_sft_parquet(episodes, folder), len(episodes), len(generated) - len(episodes)
        rows = run_sft(sft_overrides(parquet=parquet, model=self.model_dir, out=folder, steps=c.cold_start_steps,
                                     batch_size=c.batch_problems * c.group_size, micro_batch_size=c.micro_batch_size,
                                     max_length=c.prompt_length + c.response_length, lr=c.sft_learning_rate,
                                     seed=c.seed, mixed_precision=train_precision(c, SFT_ENGINE)),
                       out=folder, log=log, threads=c.engine_threads)
        hand_over(folder / "checkpoints" / f"global_step_{c.cold_start_steps}", self.cold_start_checkpoint / "actor",
                  c.learning_rate)
        shutil.rmtree(folder / "checkpoints")  # what is left of the SFT's: its dataloader state and step marker
        losses = [row["train/loss"] for row in rows if "train/loss" in row]
        return {"cold_start/steps": len(losses), "cold_start/loss_first": losses[0], "cold_start/loss_last": losses[-1],
                "cold_start/dialogues": kept, "cold_start/dialogues_dropped": dropped,
                "time/cold_start_s": time.perf_counter() - t0}


def _human_teacher_set(run: LocalRun, folder: Path) -> tuple[Path, int, int]:
    """MathDial's human-teacher dialogues on problems other than the run's (:mod:`pearl_verl.sft.mathdial_teachers`),
    ``cold_start_dialogues x num_problems`` of them, as ``folder/train.parquet``. Returns it, the dialogues kept and
    the conversations left out."""
    from transformers import AutoTokenizer

    from pearl_verl.data.location import data_dir
    from pearl_verl.sft.dataset import write_sft
    from pearl_verl.sft.mathdial_teachers import MATHDIAL_CONVERSATIONS, read_human_dialogues, sft_rows

    c = run.config
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir)
    sampler, rng = ConditionSampler(ability_mix=c.ability_mix), random.Random(c.seed)
    dialogues, unusable = read_human_dialogues(data_dir() / MATHDIAL_CONVERSATIONS)
    rows, left_out = sft_rows(
        dialogues, exclude_questions=[s.problem.question for s in (*run.samples, *run.eval_samples)],
        opening=lambda problem, wrong: run.simulator.opening(problem, sampler.sample(rng, wrong)),
        max_tutor_turns=c.max_tutor_turns, max_turn_tokens=c.max_tokens_per_turn,
        count_tokens=lambda text: len(tokenizer(text)["input_ids"]), limit=c.cold_start_dialogues * c.num_problems)
    if not rows:
        raise InputError(f"no MathDial teacher dialogue fits the run: {dict(unusable + left_out)}")
    return write_sft({"train": rows}, folder)[0], len(rows), sum((unusable + left_out).values())


def run_training(config: LocalTrainConfig, resume: bool = False, progress_file: TextIO | None = None,
                 extra_overrides: list[str] = ()) -> list[dict[str, Any]]:
    """Train for ``config.steps`` steps (when ``resume``, continuing from the latest checkpoint whose step verl
    logged: :func:`~pearl_verl.train_local.resume_point.resume_point`).

    Writes under ``out_dir``: ``metrics.jsonl`` (the cold start, every step as verl logged it, every
    evaluation; appended as it goes), ``heldout.jsonl`` (every held-out dialogue of every evaluation, from
    verl's validation dumps in ``validation/``),
    ``curves.png``, ``dialogues.md`` (held-out dialogues where RL started and at the last step),
    ``dialogues/`` (every training dialogue with its judgement and advantage), ``summary.txt``,
    ``checkpoints/`` (verl's), ``config.json`` (the settings) and ``train.log`` (verl's output). Prints a
    progress bar to ``progress_file`` (default: stderr).

    Returns:
        The metrics rows of the run directory, earlier runs' included when resuming.
    """
    from tqdm import tqdm

    from pearl_verl.train_local.resume_point import resume_point
    from pearl_verl.train_local.role_rates import served_roles, student_mode
    from pearl_verl.train_local.verl_run import run_main_ppo
    from pearl_verl.verl_plugin.names import VALIDATION_TIME_KEY

    run = LocalRun(config, extra_overrides)
    out = run.out
    roles = served_roles(run.verl_config)
    settings = {"config": asdict(config), "overrides": list(extra_overrides), "served_roles": list(roles),
                "student_structured_output": student_mode(run.verl_config)}
    write_whole(out / "config.json", json.dumps(settings, indent=1))
    metrics_path, heldout_path = out / "metrics.jsonl", out / "heldout.jsonl"
    start = resume_point(out).step if resume else 0  # a checkpoint whose row verl never logged is run again
    cold = finished_cold_start(out) if resume and not start and config.cold_start_steps else None
    if start:
        rows = [row for row in read_metrics(metrics_path) if row["step"] <= start]
        _rewrite(metrics_path, rows)  # steps logged after the checkpoint run again
        # and the dialogues of an evaluation without its row (a stop between the two) are recorded again with it
        evaluated = {row["step"] for row in rows if "eval/reward/mean" in row}
        _rewrite(heldout_path, [row for row in read_metrics(heldout_path) if row["step"] in evaluated])
    else:
        rows = []
        for stale in (metrics_path, heldout_path, out / "summary.txt", out / "dialogues.md"):
            stale.unlink(missing_ok=True)  # a fresh run starts fresh logs
        shutil.rmtree(out / "validation", ignore_errors=True)
    progress = tqdm(total=config.steps, initial=start, desc="train-local", unit="step", file=progress_file)

    def record(row: dict[str, Any]) -> None:
        row = stamped("metrics", row)
        append_metrics(metrics_path, row)
        rows.append(row)

    try:
        if not start:
            run.write_data()
            first: dict[str, Any] = cold or {"step": 0, "phase": "initial"}
            if config.cold_start_steps and not cold:
                progress.set_postfix_str("cold start (verl's SFT trainer)")
                with open(out / "train.log", "a", encoding="utf-8") as log:
                    first = {"step": 0, "phase": "cold_start", **run.cold_start(log)}
            record(first)

        def on_step(row: dict[str, Any]) -> None:
            _copy_dialogues(out, row["step"])
            record(row)
            progress.update(row["step"] - progress.n)
            progress.set_postfix(reward=f"{row['reward/mean']:.3f}",
                                 turns=f"{row.get('pearl/episode/tutor_turns/mean', math.nan):.1f}",
                                 loss=f"{row.get('actor/pg_loss', math.nan):+.3f}")

        def on_validation(step: int, logged: dict[str, Any]) -> None:
            dump = out / "validation" / f"{step}.pearl.jsonl"
            held = HeldOut.from_validation(dump, config.eval_seeds, config.group_size) if dump.exists() else None
            if held is None or not held.episodes:  # trainer.validation_data_dir moved, or every dialogue failed
                logger.warning("verl validated step %d, but %s holds no judged dialogue: no held-out row", step, dump)
                return
            phase = "train" if step else ("cold_start" if config.cold_start_steps else "initial")
            append_heldout(heldout_path, held, phase)
            record({"step": step, "phase": "heldout", **held.metrics(), "time/eval_s": logged.get(VALIDATION_TIME_KEY)})

        if start:
            _catch_up(out, start, rows, record, on_validation)
        if start < config.steps:
            evaluating = not start and config.eval_problems
            progress.set_postfix_str("starting verl's trainer (Ray)" + (", held-out evaluation" if evaluating else ""))
            with open(out / "train.log", "a", encoding="utf-8") as log:
                run_main_ppo(run.overrides(resume_from=start), out=out, log=log, on_step=on_step,
                             on_validation=on_validation, resume_hint=RESUME_HINT, threads=config.engine_threads)
        progress.set_postfix_str("done")
    finally:
        progress.close()  # also ends the bar's line before an error is printed
    plot_curves(rows, out / "curves.png", f"pearl-verl train-local ({config.model}, seed {config.seed})", OBSERVABLES)
    _write_summary(out, read_heldout(heldout_path), rows, roles)
    return rows


def _catch_up(out: Path, start: int, rows: list[dict[str, Any]], record: Callable[[dict[str, Any]], None],
              on_validation: Callable[[int, dict[str, Any]], None]) -> None:
    """Record what the stopped launch's verl logged up to the checkpoint ``start`` but this process had not recorded
    yet: a stop can fall between verl's line and its rows here (a step's, then its validation's), and the resumed
    launch does not run those steps again."""
    from pearl_verl.train_local.verl_run import is_validation, logged_rows, step_row

    have = {(row["step"], row["phase"]) for row in rows}
    for logged in logged_rows(out):
        step = int(logged["step"])
        if step > start:
            continue
        train = step_row(logged)
        if train is not None and (step, "train") not in have:
            _copy_dialogues(out, step)
            record(train)
        if is_validation(logged) and (step, "heldout") not in have:
            on_validation(step, logged.get("data", {}))


def finished_cold_start(out: Path) -> dict[str, Any] | None:
    """The cold start's ``metrics.jsonl`` row, when an earlier launch of the run in ``out`` finished it: its step-0
    checkpoint is there (the hand-over moves it into place whole) and the row was recorded. None otherwise: a run
    stopped after its cold start but before its first RL checkpoint resumes RL from the cold start, not from the
    beginning."""
    if not hf_export(out, 0).is_dir():
        return None
    return next((row for row in read_metrics(out / "metrics.jsonl") if row.get("phase") == "cold_start"), None)


def _copy_dialogues(out: Path, step: int) -> None:
    """``dialogues/step_NNNN.jsonl`` from verl's rollout dump of the step (``<step>.pearl.jsonl``)."""
    dump = out / "rollouts" / f"{step}.pearl.jsonl"
    if dump.exists():
        write_step_dialogues(out, step, [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines() if line])


def _rewrite(path: Path, rows: list[dict[str, Any]]) -> None:
    write_whole(path, (json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _write_summary(out: Path, evaluations: list[tuple[str, HeldOut]], rows: list[dict[str, Any]],
                   roles: tuple[str, ...]) -> None:
    """summary.txt: the served roles' rates, and the evaluation RL started from against the last one
    (with dialogues.md) when there are two."""
    from pearl_verl.train_local.heldout import summary, write_heldout_markdown
    from pearl_verl.train_local.role_rates import role_lines, role_rates

    lines = []
    rl_start = [held for phase, held in evaluations if phase in ("initial", "cold_start")]
    if rl_start and evaluations[-1][1] is not rl_start[-1]:
        before, after = rl_start[-1], evaluations[-1][1]
        lines.append(summary(before, after))
        write_heldout_markdown(out / "dialogues.md", before, after)
    lines += role_lines(role_rates(rows, roles))
    if lines:
        write_whole(out / "summary.txt", "\n".join(lines) + "\n")

