"""The PEARL advantage estimator (paper §3.3) and what runs around it in a training step.

``estimator``: discretise -> turn decay -> per-dimension group z-score -> mean, on tensors (no verl).
``inputs``: the judge's per-sample reward fields -> the estimator's tensors (the reader of what
:mod:`pearl_verl.judge.reward_info` writes). ``metrics``: the step's ``pearl/*`` metrics.
``failure_guard``: stops a run whose judge or student keeps failing. ``report``/``report_cli``:
``pearl-verl advantage``, the estimator step by step for judged dialogues.
"""

from pearl_verl.advantage.estimator import (
    AdvantageBreakdown,
    AdvantageConfig,
    compute_pearl_advantage,
    compute_pearl_advantage_breakdown,
)

__all__ = ["AdvantageBreakdown", "AdvantageConfig", "compute_pearl_advantage", "compute_pearl_advantage_breakdown"]
