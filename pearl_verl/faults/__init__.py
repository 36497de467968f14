"""Fault injection: a flaky OpenAI-compatible server for drills and tests, and the fault drill.

- :mod:`~pearl_verl.faults.plan`: fault kinds, seeded per-kind rates, the recorded per-request plan.
- :mod:`~pearl_verl.faults.server`: :class:`FaultServer`, a local chat server (127.0.0.1) that injects them.
- :mod:`~pearl_verl.faults.responders`: healthy student and judge answers (scripted test doubles).
- :mod:`~pearl_verl.faults.recording`: a backend wrapper recording each logical call.
- :mod:`~pearl_verl.faults.drill`: the rollout + judge + advantage drill; :mod:`~pearl_verl.faults.checks`
  what it must show; :mod:`~pearl_verl.faults.drill_report` its numbers. ``python bench/bench_faults.py`` runs it.

Test doubles only: nothing here is used by a recipe or a training run.
"""

from pearl_verl.faults.plan import FAULT_KINDS, TRANSPORT_FAULTS, FaultConfig, FaultKind, FaultPlan, Injection
from pearl_verl.faults.server import FaultServer

__all__ = ["FAULT_KINDS", "TRANSPORT_FAULTS", "FaultConfig", "FaultKind", "FaultPlan", "FaultServer", "Injection"]
