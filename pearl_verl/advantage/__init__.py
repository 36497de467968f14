"""The PEARL advantage estimator (paper §3.3) and what runs around it in a training step.

``advantage_config``: its settings (``pearl.advantage``), each default written there once, readable without torch.
``estimator``: discretise -> turn decay -> per-dimension group z-score -> mean, on tensors (no verl).
``inputs``: the judge's per-sample reward fields -> the estimator's tensors (the reader of what
:mod:`pearl_verl.judge.reward_info` writes). ``metrics``: the step's ``pearl/*`` metrics.
``failure_guard``: stops a run whose judge or student keeps failing. ``report``/``report_cli``:
``pearl-verl advantage``, the estimator step by step for judged dialogues. The public names are
exported by :mod:`pearl_verl` (``from pearl_verl import compute_pearl_advantage``).
"""
