"""Policy-gradient training of a tabular tutoring policy with one of the five advantage estimators.

The policy is a softmax over :data:`env.ACTIONS` per observed state (phase, stuck, frustrated, turn
bucket), initialised from a "cold-start" prior: a tutor that mostly asks questions and gives
hints, rarely explains, reveals or checks, and ends soon after the student has solved the
problem. One update per batch, on policy, with the GSPO sequence objective: with the ratio at 1 the
clipped GSPO loss has the gradient of ``-A_i * mean_t log pi(a_t | s_t)`` (the length-normalised
sequence log-likelihood), averaged over the batch. Adam makes the step size insensitive to each
estimator's advantage scale, so the estimators differ only in how they rank and weigh episodes.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from env import ACTIONS, CRITERIA, DIMS, GATE, NUM_STATES, PHASES, STEPS, EnvConfig, criteria, rollout
from methods import advantages

PRIOR: dict[str, float] = {
    "question": 1.0, "hint": 0.5, "explain": 0.0, "reveal": -1.5,
    "check": -1.0, "encourage": -0.5, "diagnose": -1.0, "end": -5.0,
}  # fmt: skip
END_WHEN_SOLVED = 6.5  # added to "end" once solved: the cold-start tutor closes the session


@dataclass(frozen=True)
class TrainConfig:
    """One training run.

    Attributes:
        method: the advantage estimator (``methods.METHODS``).
        seed: seeds conditions, rollouts and evaluation.
        steps: policy updates.
        groups: groups per batch (each one student condition).
        group_size: episodes per group (paper: 8).
        lr: Adam learning rate on the logits.
        eval_every: steps between evaluations.
        eval_groups: groups in an evaluation batch (noise-free judge).
        env: the environment.
    """

    method: str
    seed: int
    steps: int = 200
    groups: int = 64
    group_size: int = 8
    lr: float = 0.05
    eval_every: int = 10
    eval_groups: int = 256
    env: EnvConfig = field(default_factory=EnvConfig)


@dataclass
class RunResult:
    """What one run measured.

    Attributes:
        config: the settings (as a dict).
        steps: the steps at which the policy was evaluated.
        dims: per evaluation, the mean noise-free score per dimension (``DIMS`` order).
        turns: per evaluation, the mean tutor turns.
        completion: per evaluation, the share of sessions passing the completion gate.
        actions: per evaluation, the share of turns spent on each behaviour (``ACTIONS`` order).
        criteria: each criterion's mean gated score in [0, 1] at the last evaluation (noise-free).
        final_weights: how much each dimension moves this method's advantage at the final policy
            (:func:`effective_weights`, ``DIMS`` order).
        seconds: wall time of the run.
    """

    config: dict[str, Any]
    steps: list[int] = field(default_factory=list)
    dims: list[list[float]] = field(default_factory=list)
    turns: list[float] = field(default_factory=list)
    completion: list[float] = field(default_factory=list)
    actions: list[list[float]] = field(default_factory=list)
    criteria: dict[str, float] = field(default_factory=dict)
    final_weights: list[float] = field(default_factory=list)
    seconds: float = 0.0


def initial_logits() -> torch.Tensor:
    """(NUM_STATES, len(ACTIONS)) the cold-start policy's logits."""
    logits = torch.tensor([PRIOR[a] for a in ACTIONS], dtype=torch.float64).repeat(NUM_STATES, 1)
    per_phase = NUM_STATES // PHASES
    logits[STEPS * per_phase :, ACTIONS.index("end")] += END_WHEN_SOLVED  # phases "solved", "reflected"
    return logits


def conditions(groups: int, group_size: int, env: EnvConfig, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """(B,) ability, (B,) misconception and (B,) group ids: one student condition per group."""
    ability = torch.randint(0, 3, (groups,), generator=gen)
    misconception = torch.rand(groups, generator=gen, dtype=torch.float64) < env.misconception_rate
    index = torch.arange(groups).repeat_interleave(group_size)
    return ability[index], misconception[index], index


def evaluate(
    logits: torch.Tensor, config: TrainConfig, seed: int
) -> tuple[list[float], float, float, list[float], dict[str, float]]:
    """Noise-free dimension means, mean turns, gate rate, behaviour shares and criterion means of a fresh batch."""
    gen = torch.Generator().manual_seed(seed)
    ability, misconception, _ = conditions(config.eval_groups, config.group_size, config.env, gen)
    batch = rollout(logits, ability, misconception, config.env, gen)
    taken = torch.bincount(batch.actions[batch.alive], minlength=len(ACTIONS)).double()
    raw = criteria(batch.features)
    gated = {name: float((raw[name] * raw[GATE] / (1.0 if name == GATE else 2.0)).mean())
             for dim in DIMS for name in CRITERIA[dim]}
    return (
        batch.true_scores.mean(dim=0).tolist(),
        float(batch.turns.mean()),
        float(gated[GATE]),
        (taken / taken.sum()).tolist(),
        gated,
    )


def train(config: TrainConfig) -> RunResult:
    """Train from the cold-start policy and evaluate every ``eval_every`` steps."""
    start = time.perf_counter()
    gen = torch.Generator().manual_seed(config.seed)
    logits = initial_logits().requires_grad_(True)
    optimizer = torch.optim.Adam([logits], lr=config.lr)
    result = RunResult(config=asdict(config))
    for step in range(config.steps + 1):
        if step % config.eval_every == 0 or step == config.steps:
            dims, turns, completion, shares, result.criteria = evaluate(
                logits, config, seed=10_000 * (config.seed + 1) + step
            )
            result.steps.append(step)
            result.dims.append(dims)
            result.turns.append(turns)
            result.completion.append(completion)
            result.actions.append(shares)
        if step == config.steps:
            break
        ability, misconception, index = conditions(config.groups, config.group_size, config.env, gen)
        batch = rollout(logits, ability, misconception, config.env, gen)
        advantage = advantages(config.method, batch.scores, batch.turns, batch.completed, index.numpy())
        log_probs = torch.log_softmax(logits, dim=-1)[batch.states, batch.actions]  # (B, max_turns)
        alive = batch.alive.double()
        sequence = (log_probs * alive).sum(dim=1) / alive.sum(dim=1)  # GSPO: length-normalised
        loss = -(advantage.double() * sequence).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    result.final_weights = final_effective_weights(logits.detach(), config)
    result.seconds = time.perf_counter() - start
    return result


def final_effective_weights(logits: torch.Tensor, config: TrainConfig) -> list[float]:
    """:func:`effective_weights` of this run's method on a fresh batch from ``logits`` (noisy judge)."""
    gen = torch.Generator().manual_seed(20_000 + config.seed)
    ability, misconception, index = conditions(config.eval_groups, config.group_size, config.env, gen)
    batch = rollout(logits, ability, misconception, config.env, gen)
    advantage = advantages(config.method, batch.scores, batch.turns, batch.completed, index.numpy())
    return effective_weights({config.method: advantage}, batch.scores, index.numpy())[config.method]


def effective_weights(method_advantages: dict[str, torch.Tensor], scores: torch.Tensor, index: np.ndarray) -> dict:
    """How much each dimension moves each estimator's advantage.

    Regresses the advantage on every dimension's within-group z-score of its raw score (least
    squares over the batch; a dimension that does not vary in a group has z = 0 there) and
    normalises the coefficients so their absolute values sum to 1. Mean-reward GRPO weighs a
    dimension by its within-group spread; PEARL without discretisation weighs all equally (1/K);
    discretisation and the turn penalty change what the advantage sees, which the weights show.

    Returns:
        method -> list of K weights (``DIMS`` order).
    """
    group = torch.as_tensor(index)
    z = torch.zeros_like(scores)
    for g in torch.unique(group):
        rows = group == g
        block = scores[rows]
        std = block.std(dim=0, unbiased=True)
        z[rows] = torch.where(std > 0, (block - block.mean(dim=0)) / std.clamp(min=1e-12), 0.0)
    design = torch.cat([z, torch.ones(z.shape[0], 1, dtype=z.dtype)], dim=1)
    weights = {}
    for method, adv in method_advantages.items():
        coef = torch.linalg.lstsq(design, adv.double().unsqueeze(1)).solution[:-1, 0]
        total = coef.abs().sum()
        weights[method] = (coef / total).tolist() if total > 0 else coef.tolist()
    return weights


def dimension_statistics(scores: torch.Tensor, index: np.ndarray) -> dict[str, list[float]]:
    """Per dimension: mean, mean within-group std, and the share of groups where it varies at all
    (raw and after the paper's discretisation)."""
    from pearl_verl.advantage.estimator import discretize_scores

    group = torch.as_tensor(index)
    binned, _ = discretize_scores(scores)
    stds, varies, varies_binned = [], [], []
    for g in torch.unique(group):
        rows = group == g
        stds.append(scores[rows].std(dim=0, unbiased=True))
        varies.append((scores[rows].max(dim=0).values > scores[rows].min(dim=0).values).double())
        varies_binned.append((binned[rows].max(dim=0).values > binned[rows].min(dim=0).values).double())
    return {
        "mean": scores.mean(dim=0).tolist(),
        "within_group_std": torch.stack(stds).mean(dim=0).tolist(),
        "groups_varying": torch.stack(varies).mean(dim=0).tolist(),
        "groups_varying_discretised": torch.stack(varies_binned).mean(dim=0).tolist(),
    }
