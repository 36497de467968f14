"""``pearl-verl plan``: does a recipe fit its GPUs, how many tokens a step makes, and what must serve them.

Every number is a formula over the recipe's settings, the models' configs and a few stated
assumptions (:class:`Assumptions`); docs/cluster.md derives each formula. The estimates are meant
for the question "will this run, and where will it wait", not to the gigabyte:

- actor update (FSDP2, verl's hybrid engine): verl keeps the actor's fp32 master weights, fp32
  gradients and Adam's two fp32 moments sharded over the W training GPUs (16 P / W bytes), and loads
  them all to the GPU for the update even with ``param_offload``/``optimizer_offload`` (those move
  them to the CPU while vLLM generates). On top: two gathered layers in bf16 (the one computing and
  the prefetched next), the gradient-checkpointing activations of a micro-batch of ``t`` tokens per
  GPU (``ppo_max_token_len_per_gpu``; Ulysses splits the ``sp * t`` tokens of a micro-batch over
  ``sp`` GPUs) and its fp32 logits with their gradient.
- rollout (vLLM, asleep during the update): ``gpu_memory_utilization`` of each GPU, holding the bf16
  weights split over the tensor-parallel group, a fixed overhead (CUDA graphs, activations) and the
  KV cache; the cache's tokens against the tokens of the dialogues a replica runs at once.
- student and judge servers: the same KV arithmetic on their own GPUs, and the output tokens per
  second they must sustain to keep up with the tutor's generation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.pearl_config import AgentConfig, load_pearl_config
from pearl_verl.plan.model_specs import ModelSpec
from pearl_verl.ranges import (
    COUNT,
    FRACTION,
    NON_NEGATIVE_NUMBER,
    NULLS,
    POSITIVE,
    POSITIVE_NUMBER,
    POSITIVE_OR_NULL,
    Range,
    bad_value,
)

GiB = 1024**3
GPU_MEMORY_GB: dict[str, float] = {"h200": 141.0, "h100": 80.0, "a100-80g": 80.0, "a100-40g": 40.0, "l40s": 48.0}
"""Memory of the GPUs the plan knows by name, in GB (10^9 bytes), as the vendors state it."""


@dataclass(frozen=True)
class RecipeSettings:
    """What the plan reads from the config a recipe composes to (:func:`settings_from_config`); a field's default
    stands in only where that config has no such key (Megatron's actor has no Ulysses size).

    Attributes:
        nnodes: ``trainer.nnodes``.
        gpus_per_node: ``trainer.n_gpus_per_node``.
        train_batch_size: ``data.train_batch_size`` (problems per step).
        rollout_n: ``actor_rollout_ref.rollout.n`` (dialogues per problem, the GSPO group).
        max_prompt_length: ``data.max_prompt_length``.
        max_response_length: ``data.max_response_length`` (all tutor and student tokens of a dialogue).
        ppo_max_token_len_per_gpu: ``actor_rollout_ref.actor.ppo_max_token_len_per_gpu``.
        sequence_parallel: ``actor_rollout_ref.actor.ulysses_sequence_parallel_size``.
        rollout_tp: ``actor_rollout_ref.rollout.tensor_model_parallel_size``.
        rollout_gpu_memory_utilization: ``actor_rollout_ref.rollout.gpu_memory_utilization``.
        engine: ``fsdp``, ``fsdp2`` or ``megatron`` (the plan models FSDP's actor memory only).
        max_tutor_turns: ``pearl.agent.max_tutor_turns``.
        max_tokens_per_turn: ``pearl.agent.max_tokens_per_turn`` (None: only the response budget).
        judge_samples: ``reward.reward_kwargs.samples`` (self-consistency judge calls per dialogue).
    """

    nnodes: int = 1
    gpus_per_node: int = 8
    train_batch_size: int = 64
    rollout_n: int = 8
    max_prompt_length: int = 4096
    max_response_length: int = 16384
    ppo_max_token_len_per_gpu: int = 24576
    sequence_parallel: int = 1
    rollout_tp: int = 1
    rollout_gpu_memory_utilization: float = 0.5
    engine: str = "fsdp2"
    max_tutor_turns: int = AgentConfig.max_tutor_turns
    max_tokens_per_turn: int | None = AgentConfig.max_tokens_per_turn
    judge_samples: int = JudgeConfig.samples

    @property
    def fsdp(self) -> bool:
        """Whether the actor trains under FSDP (verl's ``fsdp`` or ``fsdp2``), the engine the memory formula models."""
        return self.engine in ("fsdp", "fsdp2")

    @property
    def gpus(self) -> int:
        return self.nnodes * self.gpus_per_node

    @property
    def dialogues(self) -> int:
        """Dialogues per step: problems x group size."""
        return self.train_batch_size * self.rollout_n


OVERRIDE_KEYS: dict[str, str] = {
    "trainer.nnodes": "nnodes",
    "trainer.n_gpus_per_node": "gpus_per_node",
    "data.train_batch_size": "train_batch_size",
    "actor_rollout_ref.rollout.n": "rollout_n",
    "data.max_prompt_length": "max_prompt_length",
    "data.max_response_length": "max_response_length",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "ppo_max_token_len_per_gpu",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size": "sequence_parallel",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "rollout_tp",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "rollout_gpu_memory_utilization",
    "actor_rollout_ref.actor.strategy": "engine",
    "pearl.agent.max_tutor_turns": "max_tutor_turns",
    "pearl.agent.max_tokens_per_turn": "max_tokens_per_turn",
    "reward.reward_kwargs.samples": "judge_samples",
}
"""verl override key (without a leading ``+``) -> :class:`RecipeSettings` field."""

SETTING_RANGES: dict[str, Range] = {
    **{field: POSITIVE for field in OVERRIDE_KEYS.values()},
    "rollout_gpu_memory_utilization": FRACTION,
    "max_tokens_per_turn": POSITIVE_OR_NULL,
}
"""The values each numeric :class:`RecipeSettings` field may take (``engine`` is text)."""


def override_values(overrides: list[str]) -> dict[str, str]:
    """``{key: value}`` of ``key=value`` overrides, a leading ``+`` dropped (other words, such as the
    command itself in a dry run's output, are skipped; a later key wins, as in Hydra)."""
    return dict(o.lstrip("+").split("=", 1) for o in overrides if "=" in o)


def settings_from_overrides(overrides: list[str]) -> RecipeSettings:
    """The :class:`RecipeSettings` of a recipe's ``key=value`` overrides (others are ignored).

    Each value is checked against its field's range (:data:`SETTING_RANGES`) here, where it is read.

    Raises:
        InputError: ``KEY=VALUE: what is allowed`` for the first value out of its range (null where a
            number is required, text, nan, inf, 0 or a negative size, a memory fraction above 1).
    """
    values: dict[str, Any] = {}
    given = override_values(overrides)
    if given.get("model_engine") == "megatron":
        values["engine"] = "megatron"
    for key, value in given.items():
        if key not in OVERRIDE_KEYS:
            continue
        field = OVERRIDE_KEYS[key]
        if field == "engine":
            if value.strip() in ("", *NULLS):
                raise bad_value(key, value, "a training strategy such as fsdp2 or megatron")
            values[field] = value
        else:
            values[field] = SETTING_RANGES[field].check(key, value)
    return RecipeSettings(**values)


_ABSENT = object()


def settings_from_config(config: Any) -> RecipeSettings:
    """The :class:`RecipeSettings` a run composes to (an omegaconf config of verl's ``ppo_trainer`` with PEARL's
    parts and the recipe's overrides): what the recipe sets, and for the rest what verl and the method default to.

    Raises:
        InputError: ``KEY=VALUE: what is allowed`` for the first value out of its range.
    """
    from omegaconf import OmegaConf

    section = config.get("pearl")
    agent = load_pearl_config(None if section is None else OmegaConf.to_container(section, resolve=True)).agent
    read = {"pearl.agent.max_tutor_turns": agent.max_tutor_turns,
            "pearl.agent.max_tokens_per_turn": agent.max_tokens_per_turn}
    values: dict[str, Any] = {}
    for key, field in OVERRIDE_KEYS.items():
        value = read[key] if key in read else OmegaConf.select(config, key, default=_ABSENT)
        if value is _ABSENT:  # a key the engine's config has not (Megatron's actor: no Ulysses), or the judge's
            continue
        if field == "engine":
            values[field] = "megatron" if OmegaConf.select(config, "model_engine") == "megatron" else str(value)
        else:
            values[field] = SETTING_RANGES[field].check(key, value)
    return RecipeSettings(**values)


@dataclass(frozen=True)
class Assumptions:
    """What a recipe does not say; each is a flag of ``pearl-verl plan`` (defaults: docs/cluster.md).

    Attributes:
        gpu_memory_gb: memory of one training GPU (H200: 141).
        avg_tutor_turns: tutor turns of a typical dialogue.
        tutor_tokens_per_turn: tokens of a typical tutor message.
        student_tokens_per_turn: tokens a typical student turn generates (planner JSON and message).
        student_calls_per_turn: student LLM calls per turn (planner and realiser; refine is rare).
        student_system_tokens: tokens of the student's instructions, profile and state per call.
        judge_rubric_tokens: tokens of the judge's instructions and rubric (shared by every call).
        judge_output_tokens: tokens of one judgement (24 criteria with rationales).
        vllm_overhead_gb: per-GPU memory vLLM keeps outside weights and KV cache (CUDA graphs, activations).
        tutor_tokens_per_s_per_gpu: the tutor rollout's output tokens per second per GPU at full batch.
        student_gpu_memory_gb: memory of one student-server GPU.
        student_gpus_per_replica: tensor parallelism of one student server.
        student_tokens_per_s_per_replica: output tokens per second one student replica sustains.
        judge_gpu_memory_gb: memory of one judge-server GPU.
        judge_gpus_per_replica: tensor parallelism of one judge server.
        judge_tokens_per_s_per_replica: output tokens per second one judge replica sustains.
        server_gpu_memory_utilization: ``--gpu-memory-utilization`` of the student and judge servers.
    """

    gpu_memory_gb: float = 141.0
    avg_tutor_turns: float = 7.0
    tutor_tokens_per_turn: int = 200
    student_tokens_per_turn: int = 150
    student_calls_per_turn: float = 2.0
    student_system_tokens: int = 1200
    judge_rubric_tokens: int = 3500
    judge_output_tokens: int = 1500
    vllm_overhead_gb: float = 4.0
    tutor_tokens_per_s_per_gpu: float = 1500.0
    student_gpu_memory_gb: float = 80.0
    student_gpus_per_replica: int = 1
    student_tokens_per_s_per_replica: float = 2000.0
    judge_gpu_memory_gb: float = 80.0
    judge_gpus_per_replica: int = 2
    judge_tokens_per_s_per_replica: float = 1500.0
    server_gpu_memory_utilization: float = 0.9


ASSUMPTION_RANGES: dict[str, Range] = {
    "gpu_memory_gb": POSITIVE_NUMBER,
    "avg_tutor_turns": POSITIVE_NUMBER,
    "tutor_tokens_per_turn": POSITIVE,
    "student_tokens_per_turn": POSITIVE,
    "student_calls_per_turn": POSITIVE_NUMBER,
    "student_system_tokens": COUNT,
    "judge_rubric_tokens": COUNT,
    "judge_output_tokens": POSITIVE,
    "vllm_overhead_gb": NON_NEGATIVE_NUMBER,
    "tutor_tokens_per_s_per_gpu": POSITIVE_NUMBER,
    "student_gpu_memory_gb": POSITIVE_NUMBER,
    "student_gpus_per_replica": POSITIVE,
    "student_tokens_per_s_per_replica": POSITIVE_NUMBER,
    "judge_gpu_memory_gb": POSITIVE_NUMBER,
    "judge_gpus_per_replica": POSITIVE,
    "judge_tokens_per_s_per_replica": POSITIVE_NUMBER,
    "server_gpu_memory_utilization": FRACTION,
}
"""The values each :class:`Assumptions` field may take (``pearl-verl plan`` checks its flags against them)."""


def training_memory(tutor: ModelSpec, recipe: RecipeSettings) -> dict[str, float]:
    """Bytes on one GPU during the actor update (FSDP2), by part; see the module docstring.

    Returns:
        ``states`` (16 P / W), ``gathered_layers`` (2 layers x 2 bytes), ``checkpoints`` (L t h 2),
        ``layer_recompute`` (one layer's activations and their gradients, 2 x t x a x 2 bytes with
        a = 4h + 2 q + 2 kv + 3 w + k h for attention, norms, SwiGLU width w and MoE dispatch copies),
        ``logits`` (fp32 logits and their gradient, 2 x t x V x 4) and ``total``.
    """
    t, h = recipe.ppo_max_token_len_per_gpu, tutor.hidden
    q, kv = tutor.heads * tutor.head_dim, tutor.kv_heads * tutor.head_dim
    width = tutor.active_mlp_width
    dispatch = tutor.experts_per_token * h if tutor.experts else 0
    per_token = 4 * h + 2 * q + 2 * kv + 3 * width + dispatch
    parts = {
        "states": 16 * tutor.params / recipe.gpus,
        "gathered_layers": 2 * tutor.layer_params * 2,
        "checkpoints": tutor.layers * t * h * 2,
        "layer_recompute": 2 * t * per_token * 2,
        "logits": 2 * t * tutor.vocab * 4,
    }
    parts["total"] = sum(parts.values())
    return parts


def kv_capacity_tokens(model: ModelSpec, gpu_memory_gb: float, utilization: float, tp: int, overhead_gb: float) -> int:
    """Tokens one vLLM replica's KV cache holds: (util x M - 2P/tp - overhead) / KV bytes per token per GPU."""
    free = utilization * gpu_memory_gb * 1e9 - 2 * model.params / tp - overhead_gb * 1e9
    return max(0, int(free // model.kv_bytes_per_token(tensor_parallel=tp)))


@dataclass(frozen=True)
class StepTokens:
    """Tokens of one training step at the typical dialogue length (:class:`Assumptions`).

    Attributes:
        dialogues: dialogues per step.
        tutor_output: tokens the policy generates.
        student_calls: LLM calls to the student server.
        student_output: tokens the student server generates.
        student_prompt: prompt tokens the student server reads.
        judge_calls: requests to the judge server.
        judge_output: tokens the judge server generates.
        judge_prompt: prompt tokens the judge server reads (the rubric is prefix-cached).
        dialogue_tokens: tokens of a typical dialogue (prompt and every turn).
    """

    dialogues: int
    tutor_output: float
    student_calls: float
    student_output: float
    student_prompt: float
    judge_calls: int
    judge_output: float
    judge_prompt: float
    dialogue_tokens: float


def step_tokens(recipe: RecipeSettings, a: Assumptions) -> StepTokens:
    """Tokens per step: turns x tokens per turn x dialogues, for each server."""
    d, turns = recipe.dialogues, a.avg_tutor_turns
    turn_tokens = a.tutor_tokens_per_turn + a.student_tokens_per_turn
    dialogue = min(recipe.max_prompt_length, 600) + turns * turn_tokens
    calls = d * turns * a.student_calls_per_turn
    # a student call reads its instructions and, on average, half the dialogue so far
    student_prompt = calls * (a.student_system_tokens + dialogue / 2)
    judge_calls = d * recipe.judge_samples
    return StepTokens(
        dialogues=d,
        tutor_output=d * turns * a.tutor_tokens_per_turn,
        student_calls=calls,
        student_output=d * turns * a.student_tokens_per_turn,
        student_prompt=student_prompt,
        judge_calls=judge_calls,
        judge_output=judge_calls * a.judge_output_tokens,
        judge_prompt=judge_calls * (a.judge_rubric_tokens + dialogue),
        dialogue_tokens=dialogue,
    )


@dataclass(frozen=True)
class Plan:
    """The plan's numbers (bytes, tokens, seconds) and its verdict lines."""

    recipe: RecipeSettings
    assumptions: Assumptions
    training: dict[str, float]
    rollout: dict[str, float]
    tokens: StepTokens
    servers: dict[str, dict[str, float]]
    verdicts: list[str]
    fits: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: (asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in self.__dict__.items()}


def make_plan(tutor: ModelSpec, student: ModelSpec, judge: ModelSpec, recipe: RecipeSettings, a: Assumptions) -> Plan:
    """The plan for ``recipe`` with these models on these GPUs.

    Raises:
        InputError: for settings the formulas cannot take (a TP that does not divide the GPUs).
    """
    if recipe.gpus % recipe.rollout_tp:
        raise bad_value("actor_rollout_ref.rollout.tensor_model_parallel_size", str(recipe.rollout_tp),
                        f"a divisor of the {recipe.gpus} GPUs (trainer.nnodes x trainer.n_gpus_per_node)")
    gpu_bytes = a.gpu_memory_gb * 1e9
    training = training_memory(tutor, recipe)
    replicas = recipe.gpus // recipe.rollout_tp
    capacity = kv_capacity_tokens(tutor, a.gpu_memory_gb, recipe.rollout_gpu_memory_utilization, recipe.rollout_tp,
                                  a.vllm_overhead_gb)
    per_replica = math.ceil(recipe.dialogues / replicas)
    full = recipe.max_prompt_length + recipe.max_response_length
    tokens = step_tokens(recipe, a)
    rollout = {
        "reserved": recipe.rollout_gpu_memory_utilization * gpu_bytes,
        "weights": 2 * tutor.params / recipe.rollout_tp,
        "replicas": replicas,
        "kv_tokens_per_replica": capacity,
        "dialogues_per_replica": per_replica,
        "fraction_at_full_length": min(1.0, capacity / (per_replica * full)),
        "fraction_typical": min(1.0, capacity / (per_replica * tokens.dialogue_tokens)),
    }
    window = tokens.tutor_output / (a.tutor_tokens_per_s_per_gpu * recipe.gpus)
    student_request = a.student_system_tokens + tokens.dialogue_tokens
    judge_request = a.judge_rubric_tokens + tokens.dialogue_tokens + a.judge_output_tokens
    servers = {
        "student": _server(student, a.student_gpu_memory_gb, a.student_gpus_per_replica,
                           a.student_tokens_per_s_per_replica, tokens.student_output, window, student_request, a),
        "judge": _server(judge, a.judge_gpu_memory_gb, a.judge_gpus_per_replica, a.judge_tokens_per_s_per_replica,
                         tokens.judge_output, window, judge_request, a),
    }
    verdicts, fits = _verdicts(recipe, a, training, rollout, servers, window)
    return Plan(recipe, a, training, rollout, tokens, servers, verdicts, fits)


def _server(model: ModelSpec, gpu_gb: float, tp: int, tps: float, output: float, window: float, request_tokens: float,
            a: Assumptions) -> dict[str, float]:
    """A student or judge server: its KV room, and the replicas that generate ``output`` tokens within ``window``."""
    capacity = kv_capacity_tokens(model, gpu_gb, a.server_gpu_memory_utilization, tp, a.vllm_overhead_gb)
    needed = output / window if window > 0 else 0.0
    replicas = max(1, math.ceil(needed / tps))
    return {
        "weights_per_gpu": 2 * model.params / tp,
        "kv_tokens_per_replica": capacity,
        "requests_in_kv_per_replica": capacity // max(1, int(request_tokens)),
        "tokens_per_s_needed": needed,
        "replicas_needed": replicas,
        "gpus_needed": replicas * tp,
    }


def _verdicts(
    recipe: RecipeSettings,
    a: Assumptions,
    training: Mapping[str, float],
    rollout: Mapping[str, float],
    servers: Mapping[str, Mapping[str, float]],
    window: float,
) -> tuple[list[str], bool]:
    gpu_bytes = a.gpu_memory_gb * 1e9
    lines, fits = [], True
    if not recipe.fsdp:
        lines.append(f"actor update: engine {recipe.engine} is not modelled (FSDP only); the rollout and servers are.")
    elif training["total"] > gpu_bytes:
        fits = False
        biggest = max((k for k in training if k != "total"), key=lambda k: training[k])
        lines.append(f"actor update does NOT fit: {_gb(training['total'])} of {_gb(gpu_bytes)} per GPU; the largest "
                     f"part is {biggest} ({_gb(training[biggest])}): more GPUs shrink the states, a smaller "
                     "ppo_max_token_len_per_gpu shrinks logits and activations.")
    else:
        lines.append(f"actor update fits: {_gb(training['total'])} of {_gb(gpu_bytes)} per GPU "
                     f"({_gb(gpu_bytes - training['total'])} spare).")
    if rollout["kv_tokens_per_replica"] <= 0:
        fits = False
        lines.append(f"rollout does NOT fit: the weights ({_gb(rollout['weights'])} per GPU) leave no KV cache at "
                     f"gpu_memory_utilization {recipe.rollout_gpu_memory_utilization}; raise it or the rollout TP.")
    else:
        full, typical = rollout["fraction_at_full_length"], rollout["fraction_typical"]
        lines.append(f"rollout: the KV cache holds {int(rollout['kv_tokens_per_replica']):,} tokens per replica: "
                     f"{typical:.0%} of a replica's {int(rollout['dialogues_per_replica'])} dialogues at a typical "
                     f"length, {full:.0%} at the recipe's maximum (vLLM queues the rest: slower, not a crash).")
    lines.append(f"tutor generation takes about {window:.0f} s a step at {a.tutor_tokens_per_s_per_gpu:.0f} tokens/s "
                 "per GPU (assumed; measure yours with vllm bench serve).")
    for role, server in servers.items():
        kv = int(server["requests_in_kv_per_replica"])
        short = " - too few for a training batch: give it more GPUs (TP) or replicas" if kv < 32 else ""
        lines.append(f"{role} server: {int(server['replicas_needed'])} replica(s) ({int(server['gpus_needed'])} GPUs) "
                     f"to generate {server['tokens_per_s_needed']:.0f} tokens/s; one replica's KV cache holds {kv} "
                     f"requests at a time{short}.")
    stalls = max(servers, key=lambda r: servers[r]["gpus_needed"])
    lines.append(f"bottleneck: {_bottleneck(training, gpu_bytes, rollout, servers, stalls)}")
    return lines, fits


def _bottleneck(training: Mapping[str, float], gpu_bytes: float, rollout: Mapping[str, float],
                servers: Mapping[str, Mapping[str, float]], stalls: str) -> str:
    if training["total"] > gpu_bytes:
        return "actor memory in the update."
    if rollout["fraction_at_full_length"] < 1:
        return (f"the rollout's KV cache once dialogues grow long ({rollout['fraction_at_full_length']:.0%} fit at "
                f"the maximum length), then the {stalls} server ({int(servers[stalls]['replicas_needed'])} "
                "replica(s) needed).")
    return f"the {stalls} server ({int(servers[stalls]['replicas_needed'])} replica(s) needed)."


def _gb(value: float) -> str:
    return f"{value / 1e9:.1f} GB"


def format_plan(plan: Plan, tutor: ModelSpec, student: ModelSpec, judge: ModelSpec) -> str:
    """The plan as a person reads it: inputs, the three tables, the verdict."""
    r, t, ro = plan.recipe, plan.tokens, plan.rollout
    lines = [
        f"tutor {tutor.name} ({tutor.params / 1e9:.1f}B parameters, {tutor.active_params / 1e9:.2f}B active) on "
        f"{r.gpus} x {plan.assumptions.gpu_memory_gb:.0f} GB; {r.dialogues} dialogues a step "
        f"({r.train_batch_size} problems x {r.rollout_n}); student {student.name}, judge {judge.name}",
        "",
        "actor update, per GPU (FSDP2):",
        *[f"  {name:<16} {_gb(value):>9}" for name, value in plan.training.items()],
        "rollout, per GPU (vLLM):",
        f"  reserved         {_gb(ro['reserved']):>9}  (gpu_memory_utilization {r.rollout_gpu_memory_utilization})",
        f"  weights          {_gb(ro['weights']):>9}  (TP {r.rollout_tp}, {int(ro['replicas'])} replicas)",
        f"  KV cache         {int(ro['kv_tokens_per_replica']):>9,} tokens per replica",
        f"tokens per step (typical dialogue: {t.dialogue_tokens:,.0f} tokens):",
        f"  tutor output     {t.tutor_output:>13,.0f}",
        f"  student output   {t.student_output:>13,.0f}   prompt {t.student_prompt:>13,.0f}   "
        f"calls {t.student_calls:,.0f}",
        f"  judge output     {t.judge_output:>13,.0f}   prompt {t.judge_prompt:>13,.0f}   calls {t.judge_calls:,}",
        "",
        *plan.verdicts,
        "",
        "fits" if plan.fits else "does NOT fit",
    ]
    return "\n".join(lines)
