"""verl's own trainers on this machine's CPU, as child processes: the SFT trainer of ``train-local``'s cold start
and the ``main_ppo`` of its RL stage.

Ray, TransferQueue, the FSDP2 actor worker, the ``hf`` rollout server, the ``pearl_tutor`` agent loop,
the ``pearl_judge`` reward loop, the ``pearl`` estimator in ``pearl_sync`` mode, GSPO and verl's
weight sync: the cluster path, with the CPU parts :mod:`pearl_verl.verl_plugin.cpu.parts` registers. The
parent follows verl's file logger to drive its progress bar and keeps every step's metrics in
its own ``metrics.jsonl`` (verl's logger starts its file anew on every launch, a resumed one too).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from pearl_verl.advantage.failure_guard import TrainingStalled
from pearl_verl.children import child_session
from pearl_verl.dims import DIMENSIONS
from pearl_verl.verl_plugin.config import PEARL_GSPO_CPU, PEARL_SFT_CPU, config_flags
from pearl_verl.verl_plugin.cpu.threads import TRAIN_THREADS_ENV
from pearl_verl.verl_plugin.cpu.parts import VLLM_CPU_PART

VALIDATION_PREFIX = "val-"
"""What verl's validation metrics start with (``val-core/...``, ``val-aux/...``)."""
STALL_MARK = "stayed above"
"""In the failure guard's message (:class:`TrainingStalled`), which ends the child's output when it stops a run."""


def rl_overrides(*, out: Path, policy: Path, data: Path, steps: int, save_freq: int, start: str, judge: str,
                 rollout_dtype: str, rollout: str = "hf") -> list[str]:
    """The Hydra overrides that run train-local's RL stage on the CPU parts, on top of the ``pearl_gspo_cpu`` config.

    The method and the CPU's engine settings are that config's (:mod:`pearl_verl.verl_plugin.config`, shared with the
    recipes); the sizes come from :func:`pearl_verl.train_local.train.algorithm_overrides`; these are the run's:
    model, data, rollout, judge, Ray's logical GPU, logging, checkpoints. Every checkpoint includes the Hugging Face
    export (``hf_model``), as the cluster's do. ``start``: ``disable`` (from ``policy``) or the path of a
    ``global_step_N`` checkpoint (not verl's ``auto``: its latest can be a step whose row was never logged).
    """
    resume = ["trainer.resume_mode=disable"] if start == "disable" else \
        ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={start}"]
    return [
        f"actor_rollout_ref.model.path={policy}",
        f"data.train_files=['{data / 'train.parquet'}']",
        f"data.val_files=['{data / 'val.parquet'}']",
        f"actor_rollout_ref.rollout.name={rollout}",
        *([VLLM_CPU_PART] if rollout == "vllm" else ()),  # as the CPU recipe with ROLLOUT_NAME=vllm
        f"actor_rollout_ref.rollout.dtype={rollout_dtype}",
        f"+reward.reward_kwargs.backend={judge}",
        f"trainer.total_training_steps={steps}",
        "trainer.total_epochs=1000",  # the step count ends the run
        f"trainer.save_freq={save_freq}",
        *resume,
        f"trainer.default_local_dir={out / 'checkpoints'}",
        f"trainer.rollout_data_dir={out / 'rollouts'}",
        "trainer.logger=['file']",
        "trainer.project_name=pearl_verl",
        "trainer.experiment_name=train-local",
    ]


def validation_overrides(*, folder: Path, problems: int, dialogues_per_problem: int, every: int,
                         before_training: bool) -> list[str]:
    """The held-out evaluation as verl's validation of ``data.val_files``: before training (the policy RL starts
    from), every ``every`` steps and at the last, ``dialogues_per_problem`` sampled dialogues per problem at the
    training temperature and top-k, in the order of the file; ``pearl_sync`` writes the judged dialogues to ``folder``.
    No validation when ``problems`` is 0."""
    if not problems:
        return ["trainer.test_freq=-1", "trainer.val_before_train=False"]
    return [
        f"trainer.test_freq={every}",
        f"trainer.val_before_train={before_training}",
        f"trainer.validation_data_dir={folder}",
        "data.validation_shuffle=False",
        f"actor_rollout_ref.rollout.val_kwargs.n={dialogues_per_problem}",
        "actor_rollout_ref.rollout.val_kwargs.temperature=${actor_rollout_ref.rollout.temperature}",
        "actor_rollout_ref.rollout.val_kwargs.do_sample=True",
        "actor_rollout_ref.rollout.val_kwargs.top_p=1.0",
        "actor_rollout_ref.rollout.val_kwargs.top_k=${actor_rollout_ref.rollout.top_k}",
    ]


def latest_checkpoint(out: Path) -> int:
    """The step of verl's latest checkpoint under ``out/checkpoints`` (0 when there is none)."""
    marker = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    return int(marker.read_text().strip()) if marker.exists() else 0


def checkpoint_dir(out: Path, step: int) -> Path:
    """verl's checkpoint of ``step`` under ``out/checkpoints`` (step 0: the cold start's hand-over)."""
    return out / "checkpoints" / f"global_step_{step}"


def hf_export(out: Path, step: int) -> Path:
    """The Hugging Face export of the step-``step`` checkpoint."""
    return checkpoint_dir(out, step) / "actor" / "huggingface"


def step_row(verl_row: dict[str, Any]) -> dict[str, Any] | None:
    """One training step of verl's file logger as a ``metrics.jsonl`` row; None for other rows (validation).

    ``reward/mean`` is the mean of the eight per-dimension judge rewards over the dialogues the judge
    scored, as the held-out ``eval/reward/mean``.
    """
    data = verl_row.get("data", {})
    if not any(key.startswith("pearl/") for key in data):
        return None
    dims = [data.get(f"pearl/reward/{d}/mean") for d in DIMENSIONS]
    reward = sum(dims) / len(dims) if all(isinstance(v, int | float) for v in dims) else math.nan
    return {"step": int(verl_row["step"]), "phase": "train", "reward/mean": reward, **data}


def is_validation(verl_row: dict[str, Any]) -> bool:
    """Whether a row of verl's file logger holds a validation's metrics."""
    return any(key.startswith(VALIDATION_PREFIX) for key in verl_row.get("data", {}))


def logged_rows(out: Path) -> Iterator[dict[str, Any]]:
    """The complete rows of verl's file logger from the last launch of ``main_ppo`` in ``out`` (each launch starts
    the file anew)."""
    return (row for row in _complete_rows(out / "verl_metrics.jsonl", 0) if "step" in row)


def run_main_ppo(overrides: list[str], *, out: Path, log: TextIO, on_step: Callable[[dict[str, Any]], None],
                 resume_hint: str, on_validation: Callable[[int, dict[str, Any]], None] | None = None,
                 threads: int | None = None) -> None:
    """Run ``python -m pearl_verl.verl_plugin.main_ppo`` from the ``pearl_gspo_cpu`` config with ``overrides``;
    ``on_step(row)`` for each step it logs, then ``on_validation(step, metrics)`` when it logged a validation at that
    step (``metrics``: what verl logged with it). ``threads``: what the FSDP engine computes on
    (:mod:`pearl_verl.verl_plugin.cpu.engine`; None: Ray's one thread).

    The child's output (Ray's, verl's, the workers') is appended to the file ``log``.

    Raises:
        TrainingStalled: the failure guard stopped the run (its message, with ``resume_hint``).
        RuntimeError: the run failed otherwise (the last lines of its output in the message).
    """
    def on_row(row: dict[str, Any]) -> None:
        step = step_row(row)
        if step is not None:
            on_step(step)
        if on_validation is not None and is_validation(row):
            on_validation(int(row["step"]), row.get("data", {}))

    command = [sys.executable, "-m", "pearl_verl.verl_plugin.main_ppo", *config_flags(PEARL_GSPO_CPU), *overrides,
               f"hydra.run.dir={out / 'hydra'}"]
    code, tail = _run_verl(command, metrics=out / "verl_metrics.jsonl", log=log, on_row=on_row, threads=threads)
    if code == 0:
        return
    stall = [line for line in tail.splitlines() if STALL_MARK in line and "pearl/" in line]
    if stall:
        message = stall[-1].split("TrainingStalled: ", 1)[-1].strip()
        raise TrainingStalled(message.replace("relaunch with trainer.resume_mode=auto", resume_hint))
    raise _failed("main_ppo", code, tail)


def run_sft(overrides: list[str], *, out: Path, log: TextIO, threads: int | None = None) -> list[dict[str, Any]]:
    """Run verl's SFT trainer (``torchrun -m verl.trainer.sft_trainer``, one process) from the ``pearl_sft_cpu``
    config with ``overrides``, as the cluster's SFT recipes run it, its engine on ``threads`` threads (None: torchrun's
    every core); Hydra's record goes to ``out/hydra``.

    Returns:
        verl's metrics of each step (``train/loss``, ``train/grad_norm``, ``train/lr``, ...).

    Raises:
        RuntimeError: the run failed (the last lines of its output in the message).
    """
    rows: list[dict[str, Any]] = []
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
               "-m", "verl.trainer.sft_trainer", *config_flags(PEARL_SFT_CPU), *overrides,
               f"hydra.run.dir={out / 'hydra'}"]
    code, tail = _run_verl(command, metrics=out / "verl_metrics.jsonl", log=log, threads=threads,
                           on_row=lambda row: rows.append({"step": row["step"], **row.get("data", {})}))
    if code != 0:
        raise _failed("SFT trainer", code, tail)
    return rows


def _run_verl(command: list[str], *, metrics: Path, log: TextIO,
              on_row: Callable[[dict[str, Any]], None], threads: int | None = None) -> tuple[int, str]:
    """Run a verl trainer as a child on the CPU platform, its output appended to ``log``, ``on_row`` for each row
    of verl's file logger (``metrics``) as it is written; returns its exit code and, when that is not 0, its output."""
    metrics.parent.mkdir(parents=True, exist_ok=True)
    metrics.unlink(missing_ok=True)
    env = {**os.environ, "VERL_PLATFORM": "cpu", "VERL_FILE_LOGGER_PATH": str(metrics),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop(TRAIN_THREADS_ENV, None)
    if threads is not None:
        env[TRAIN_THREADS_ENV] = str(threads)
    log.flush()
    start = log.tell()
    seen = 0
    with child_session(command, stdout=log, stderr=subprocess.STDOUT, env=env) as proc:
        while proc.poll() is None:
            seen = _follow(metrics, seen, on_row)
            time.sleep(0.5)
    _follow(metrics, seen, on_row)
    return proc.returncode, ("" if proc.returncode == 0 else _read_from(log, start))


def _failed(what: str, code: int, output: str) -> RuntimeError:
    return RuntimeError(f"verl's {what} exited with code {code}; the end of its output:\n"
                        + "\n".join(output.splitlines()[-40:]))


def _follow(path: Path, seen: int, on_row: Callable[[dict[str, Any]], None]) -> int:
    """Hand the complete lines after the first ``seen`` to ``on_row``; returns the number of lines consumed."""
    for row in _complete_rows(path, seen):
        seen += 1
        on_row(row)
    return seen


def _complete_rows(path: Path, skip: int) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    for line in lines[skip:-1]:  # the last piece is empty or a line still being written
        yield json.loads(line) if line.strip() else {}


def _read_from(log: TextIO, start: int) -> str:
    log.flush()
    with open(log.name, encoding="utf-8", errors="replace") as handle:
        handle.seek(start)
        return handle.read()
