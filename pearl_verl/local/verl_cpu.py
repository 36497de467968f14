"""verl's own trainer on a machine without a GPU: the CPU parts, registered with verl, selected on request.

Imported first by the ``verl.plugins`` entry point, so it runs in the driver, the TaskRunner and
every Ray worker before any verl module reads the device. It always registers, and never selects:

- the platform ``cpu`` (:class:`~pearl_verl.local.cpu_platform.PlatformHostCPU`), chosen only by
  ``VERL_PLATFORM=cpu``;
- the rollout backend ``hf`` (:mod:`pearl_verl.local.hf_rollout`), chosen only by
  ``actor_rollout_ref.rollout.name=hf``.

In a process where ``VERL_PLATFORM=cpu`` it also registers verl's FSDP engine for the ``cpu``
device and makes verl's worker process group plain gloo (verl builds ``cpu:gloo,cpu:gloo``, which
torch rejects). Both are couplings of :mod:`pearl_verl.verl_plugin.compat`, checked by
``pearl-verl doctor``. On a machine with a GPU nothing changes unless the user sets both.
"""

from __future__ import annotations

import os

CPU_PLATFORM = "cpu"
ROLLOUT_BACKEND = "hf"


def cpu_requested() -> bool:
    """Whether this process was asked to run verl on the host CPU (``VERL_PLATFORM=cpu``)."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == CPU_PLATFORM


def register_cpu_parts() -> None:
    """Register the CPU platform and the ``hf`` rollout; in a CPU process, the engine and gloo too. Idempotent."""
    from verl.plugin.platform.platform_manager import PlatformRegistry

    from pearl_verl.local.cpu_platform import PlatformHostCPU

    if PlatformRegistry.get(CPU_PLATFORM) is not PlatformHostCPU:
        PlatformRegistry.register(platform=CPU_PLATFORM)(PlatformHostCPU)
    # Only now: compat imports verl modules that read the device at import time.
    from pearl_verl.verl_plugin.compat import register_rollout_backend

    register_rollout_backend(
        ROLLOUT_BACKEND, "pearl_verl.local.hf_rollout", replica="HFRolloutReplica", adapter="HFServerAdapter"
    )
    if cpu_requested():
        from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

        from pearl_verl.verl_plugin.compat import register_engine_once, use_gloo_process_group

        for backend in ("fsdp", "fsdp2"):
            register_engine_once(FSDPEngineWithLMHead, "language_model", backend, CPU_PLATFORM)
        use_gloo_process_group()
