"""PEARL estimator vs verl's vectorised GRPO on the same batch, timed in one process.

Batch: B trajectories in groups of 8 (verl's uid: uuid strings in an object array, as the trainer
passes them), 8 judge dimensions in [0, 1], tutor turns 1..15, 90% completed, 5% judge failures.
verl's ``grpo_vectorized`` gets the scalar reward of each trajectory as a (B, 1) token-level
tensor, its cheapest possible input; ``pearl (verl estimator)`` is our registered function on the
same (B, 1) tensors, with the 8 dimensions passed as ``pearl_inputs``.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

GROUP = 8
DIMS = 8
GRPO = "verl grpo_vectorized (1 dim)"
CORE = "pearl compute_pearl_advantage (8 dims)"
PLUGIN = "pearl verl estimator (8 dims)"


@dataclass(frozen=True)
class Timing:
    """Wall time of one call in milliseconds over ``repeats`` calls after a warm-up."""

    name: str
    batch: int
    median_ms: float
    min_ms: float
    repeats: int


def make_batch(batch: int, seed: int = 0) -> dict:
    """Random judged batch shaped like a PEARL training step."""
    gen = np.random.default_rng(seed)
    uids = np.array([str(uuid.UUID(int=int(gen.integers(2**62)))) for _ in range(batch // GROUP)], dtype=object)
    index = np.repeat(uids, GROUP)
    scores = torch.from_numpy(gen.random((batch, DIMS)))
    valid = torch.from_numpy(gen.random(batch) > 0.05)
    return {
        "index": index,
        "scores": scores,
        "turns": torch.from_numpy(gen.integers(1, 16, batch)).double(),
        "completed": torch.from_numpy(gen.random(batch) > 0.1),
        "valid": valid,
        "scalar": scores.mean(dim=1, keepdim=True).float(),
        "mask": torch.ones(batch, 1),
    }


def time_calls(calls: dict[tuple[str, int], Callable[[], object]], repeats: int) -> list[Timing]:
    """Time every call ``repeats`` times, interleaved round by round.

    Interleaving spreads the noise of a shared machine evenly over all calls, so ratios between
    them stay meaningful even when absolute times drift.
    """
    for fn in calls.values():
        fn()  # warm-up: allocator, caches, lazy imports
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in calls}
    for _ in range(repeats):
        for key, fn in calls.items():
            start = time.perf_counter()
            fn()
            samples[key].append((time.perf_counter() - start) * 1e3)
    return [
        Timing(name, batch, statistics.median(values), min(values), repeats)
        for (name, batch), values in samples.items()
    ]


def calls_for(batch: int) -> dict[tuple[str, int], Callable[[], object]]:
    """verl's GRPO, our core function and our registered estimator on one random batch."""
    from verl.trainer.ppo.core_algos import compute_grpo_vectorized_outcome_advantage

    from pearl_verl.advantage.estimator import AdvantageConfig, compute_pearl_advantage
    from pearl_verl.advantage.inputs import PearlInputs
    from pearl_verl.verl_plugin.adv_estimator import compute_pearl_outcome_advantage

    b = make_batch(batch)
    inputs = PearlInputs(b["scores"], b["turns"], b["completed"], b["valid"])
    config = AdvantageConfig()
    return {
        (GRPO, batch): lambda: compute_grpo_vectorized_outcome_advantage(b["scalar"], b["mask"], b["index"]),
        (CORE, batch): lambda: compute_pearl_advantage(
            b["scores"], b["turns"], b["completed"], b["index"], valid=b["valid"]
        ),
        (PLUGIN, batch): lambda: compute_pearl_outcome_advantage(
            b["scalar"], b["mask"], index=b["index"], pearl_inputs=inputs, pearl_config=config
        ),
    }


def run(batches: list[int], repeats: int) -> list[Timing]:
    """Timings of all three calls at every batch size, measured together."""
    calls: dict[tuple[str, int], Callable[[], object]] = {}
    for batch in batches:
        calls.update(calls_for(batch))
    return time_calls(calls, repeats)
