"""Every private verl name pearl_verl relies on, in one place, checked against the verl we test.

verl's public extension points (the registries, ``register_trainer``, the ``verl.plugins`` entry
point) carry most of the plugin, but ten couplings reach into verl's internals:

- the agent-loop registry (``_agent_loop_registry``), which verl exposes only through ``@register``;
- the continuous-token builder's ``_render_tokens``, which the agent loop memoises;
- the V1 trainer's ``_compute_advantage(batch, metrics)`` step, which ``pearl_sync`` overrides;
- the V1 trainer's ``_validate``, which takes each batch with ``self.replay_buffer.sample(...)`` (where
  ``pearl_sync`` reads the judged dialogues before verl clears them);
- TransferQueue's row keys ``{uid}_{session_id}_{index}``, parsed to count each session once;
- ``EngineRegistry._engines``, read to register the FSDP engine for the host CPU idempotently;
- ``DictConfig._get_root()``, the only way from ``algorithm`` up to the root ``pearl`` section;
- the rollout-class registry ``verl.workers.rollout.base._ROLLOUT_REGISTRY`` (verl has a public
  registry for rollout replicas but none for the worker-side adapter), where the CPU ``hf``
  rollout adds its adapter;
- ``verl.workers.engine_workers.initialize_global_process_group_ray`` and
  ``verl.utils.distributed.initialize_global_process_group`` (verl's SFT trainer's), which build the
  backend ``cpu:gloo,{device}:{backend}`` that torch rejects when the device is the CPU: in a
  ``VERL_PLATFORM=cpu`` process both start a plain ``gloo`` group (the one patch of verl);
- verl's vLLM rollout classes and vLLM's layerwise reload, which the CPU fix of verl's weight sync
  into vLLM subclasses and calls (:mod:`pearl_verl.verl_plugin.cpu.vllm_sync`; checked only where vLLM
  is installed);

plus the four legacy-trainer functions :mod:`pearl_verl.verl_plugin.legacy` wraps. Importing this
module warns (:class:`UntestedVerlWarning`) when the installed verl is not the tested one, and
:func:`check_couplings` (run by ``pearl-verl doctor`` and by ``tests/verl_plugin/test_compat_on_cpu.py``,
one test per coupling) says which coupling a verl upgrade broke, so it fails here and not deep
inside a training step.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import inspect
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.trainer.ppo import ray_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils import distributed as verl_distributed
from verl.utils.tokenizer.continuous_token import ContinuousTokenBuilder
from verl.workers import engine_workers
from verl.workers.engine.base import EngineRegistry
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.replica import RolloutReplicaRegistry

from pearl_verl.verl_plugin import TESTED_VERL

TQ_KEY_FORMAT = "{uid}_{session_id}_{index}"

AGENT_LOOP_REGISTRY: dict[str, dict[str, str]] = _agent_loop_registry
LEGACY_HOOKS = ("compute_advantage", "compute_data_metrics", "RayPPOTrainer._update_actor", "RayPPOTrainer._log_rollout_data")


class UntestedVerlWarning(UserWarning):
    """The installed verl is not the version pearl_verl's couplings were tested against."""


class VerlCouplingError(RuntimeError):
    """verl no longer has a private name or format pearl_verl relies on (a verl upgrade)."""


def installed_verl() -> str | None:
    """The installed verl's version, or None."""
    try:
        return metadata.version("verl")
    except metadata.PackageNotFoundError:
        return None


def warn_if_untested(version: str | None = None) -> bool:
    """Warn once per process when ``version`` (default: the installed one) is not :data:`TESTED_VERL`."""
    version = installed_verl() if version is None else version
    if version == TESTED_VERL:
        return False
    warnings.warn(
        f"pearl_verl is tested against verl {TESTED_VERL}, this is verl {version}; run 'pearl-verl doctor' "
        "to check the private verl names it relies on (pearl_verl/verl_plugin/compat.py).",
        UntestedVerlWarning,
        stacklevel=2,
    )
    return True


# --- the continuous-token builder's render -----------------------------------------------------


def builder_render(builder: Any) -> Callable[..., list[int]] | None:
    """The builder's ``_render_tokens(messages, *, add_generation_prompt, tools=None)``, or None."""
    return getattr(builder, "_render_tokens", None)


def replace_builder_render(builder: Any, render: Callable[..., list[int]]) -> None:
    """Route the builder's renders (initial prompt, appended turns) through ``render``."""
    builder._render_tokens = render


# --- the V1 trainer's advantage step -----------------------------------------------------------


def check_v1_advantage_step() -> None:
    """Raise unless verl's sync V1 trainer still computes advantages in ``_compute_advantage(batch, metrics)``.

    Raises:
        VerlCouplingError: the step was renamed or its signature changed.
    """
    step = getattr(PPOTrainerSync, "_compute_advantage", None)
    params = list(inspect.signature(step).parameters) if step is not None else []
    if params != ["self", "batch", "metrics"]:
        raise VerlCouplingError(
            f"verl's PPOTrainerSync._compute_advantage is {params or 'missing'}, pearl_sync overrides "
            "(self, batch, metrics): the V1 trainer changed, see pearl_verl/verl_plugin/compat.py."
        )


def check_v1_validation() -> None:
    """Raise unless verl's V1 validation still takes its batches with ``self.replay_buffer.sample(``.

    Raises:
        VerlCouplingError: ``_validate`` is gone or takes its batches otherwise.
    """
    validate = getattr(PPOTrainerSync, "_validate", None)
    if validate is None or "self.replay_buffer.sample(" not in inspect.getsource(validate):
        raise VerlCouplingError(
            "verl's V1 _validate no longer takes its batches with self.replay_buffer.sample(...), where pearl_sync "
            "reads the judged validation dialogues: the V1 trainer changed, see pearl_verl/verl_plugin/compat.py."
        )


# --- TransferQueue row keys --------------------------------------------------------------------


def split_row_key(key: str) -> tuple[str, int]:
    """``(session, output_index)`` of a TransferQueue row key ``{uid}_{session_id}_{index}``.

    Raises:
        VerlCouplingError: the key does not have that form.
    """
    session, _, index = key.rpartition("_")
    if not session or "_" not in session or not index.isdigit():
        raise VerlCouplingError(f"Unexpected TransferQueue key {key!r}; verl 0.9.1 writes {TQ_KEY_FORMAT!r}.")
    return session, int(index)


def session_member(session: str) -> int:
    """The group member of a session ``{uid}_{session_id}`` (the session part of :func:`split_row_key`)."""
    return int(session.rpartition("_")[2])


# --- the engine registry -----------------------------------------------------------------------


def register_engine_once(engine_class: type, model_type: str, backend: str, device: str) -> bool:
    """Register ``engine_class`` for ``device`` unless one already is (verl asserts on a second one).

    Returns:
        Whether this call registered it.
    """
    if device in EngineRegistry._engines.get(model_type, {}).get(backend, {}):
        return False
    EngineRegistry.register(model_type=model_type, backend=backend, device=device)(engine_class)
    return True


# --- the rollout backends ----------------------------------------------------------------------


def register_rollout_backend(name: str, module: str, *, replica: str, adapter: str) -> None:
    """Make ``rollout.name=<name>`` resolve to ``module.replica`` (server side) and ``module.adapter`` (worker side).

    The replica goes through verl's public ``RolloutReplicaRegistry``; the adapter into the private
    rollout-class table that ``get_rollout_class`` reads. Both are looked up lazily, by name.
    """
    import importlib

    RolloutReplicaRegistry.register(name, lambda: getattr(importlib.import_module(module), replica))
    rollout_base._ROLLOUT_REGISTRY[(name, "async")] = f"{module}.{adapter}"


def _check_rollout_registry() -> None:
    table = getattr(rollout_base, "_ROLLOUT_REGISTRY", None)
    if not isinstance(table, dict) or ("vllm", "async") not in table:
        raise VerlCouplingError(
            "verl.workers.rollout.base._ROLLOUT_REGISTRY is gone or no longer keyed by (name, mode): "
            "the CPU rollout backend cannot register its adapter."
        )


# --- the process groups on the CPU --------------------------------------------------------------


def use_gloo_process_group() -> None:
    """In this process, verl's workers and verl's SFT trainer start their process group with ``gloo`` alone.

    Idempotent.
    """
    original = engine_workers.initialize_global_process_group_ray
    if not getattr(original, "pearl_gloo", False):
        def initialize_gloo(timeout_second: Any = None, backend: Any = None) -> Any:
            return original(timeout_second=timeout_second, backend=backend or "gloo")

        initialize_gloo.pearl_gloo = True  # type: ignore[attr-defined]
        engine_workers.initialize_global_process_group_ray = initialize_gloo
    if not getattr(verl_distributed.initialize_global_process_group, "pearl_gloo", False):
        verl_distributed.initialize_global_process_group = initialize_gloo_global_process_group


def initialize_gloo_global_process_group(timeout_second: int = 36000) -> tuple[int, int, int]:
    """verl's ``initialize_global_process_group`` (torchrun's environment) with the backend ``gloo`` alone."""
    import torch

    torch.distributed.init_process_group(backend="gloo", timeout=timedelta(seconds=timeout_second),
                                         init_method=os.environ.get("DIST_INIT_METHOD", None))
    return int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


initialize_gloo_global_process_group.pearl_gloo = True  # type: ignore[attr-defined]

SFT_PROCESS_GROUP_IMPORT = "from verl.utils.distributed import initialize_global_process_group"
"""How ``verl.trainer.sft_trainer.run_sft`` reaches the function: at call time, so the patch above is what it runs."""


def _check_process_group() -> None:
    function = getattr(engine_workers, "initialize_global_process_group_ray", None)
    params = inspect.signature(function).parameters if callable(function) else {}
    if "backend" not in params or "timeout_second" not in params:
        raise VerlCouplingError(
            "verl.workers.engine_workers.initialize_global_process_group_ray(timeout_second, backend) changed: "
            "the CPU platform cannot give verl's workers a gloo process group."
        )
    from verl.trainer import sft_trainer

    run_sft = getattr(sft_trainer, "run_sft", None)
    if not callable(getattr(verl_distributed, "initialize_global_process_group", None)) or not callable(run_sft) \
            or SFT_PROCESS_GROUP_IMPORT not in inspect.getsource(run_sft):
        raise VerlCouplingError(
            "verl.trainer.sft_trainer.run_sft no longer imports verl.utils.distributed.initialize_global_process_group "
            "when it runs: the CPU platform cannot give verl's SFT trainer a gloo process group."
        )


# --- OmegaConf's root --------------------------------------------------------------------------


def config_root(config: Any) -> Any:
    """The root of a node of a DictConfig tree (``algorithm`` -> the whole config), or None."""
    if isinstance(config, DictConfig):
        return config._get_root()
    return None


# --- all of them -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coupling:
    """One private verl name or format and whether the installed verl still has it."""

    name: str
    ok: bool
    detail: str


def check_couplings() -> list[Coupling]:
    """Check each coupling against the installed verl without building a trainer (CPU, a second)."""
    return [
        _coupling("agent-loop registry", lambda: _is_instance(AGENT_LOOP_REGISTRY, dict, "_agent_loop_registry")),
        _coupling("builder render", _check_builder_render),
        _coupling("V1 advantage step", check_v1_advantage_step),
        _coupling("V1 validation", check_v1_validation),
        _coupling("engine registry", lambda: _is_instance(EngineRegistry.__dict__.get("_engines"), dict, "_engines")),
        _coupling("config root", _check_config_root),
        _coupling("legacy trainer hooks", _check_legacy_hooks),
        _coupling("rollout-class registry", _check_rollout_registry),
        _coupling("process groups", _check_process_group),
        check_vllm_cpu_sync(),
    ]


VLLM_SYNC = "vLLM weight sync on the CPU"


def check_vllm_cpu_sync() -> Coupling:
    """The names the CPU fix of verl's weight sync into vLLM relies on (imports vLLM; fine where it is absent)."""
    if importlib.util.find_spec("vllm") is None:
        return Coupling(VLLM_SYNC, True, "vLLM is not installed: nothing to check")
    try:
        from pearl_verl.verl_plugin.cpu.vllm_sync import check_vllm_couplings

        problems = check_vllm_couplings()
    except Exception as exc:  # noqa: BLE001 - an import that fails is what the doctor must show
        return Coupling(VLLM_SYNC, False, f"importing verl's vLLM rollout fails: {type(exc).__name__}: {exc}")
    return Coupling(VLLM_SYNC, not problems, "; ".join(problems) or
                    "present (verl's vLLM rollout classes, vLLM's layerwise reload)")


def _coupling(name: str, check: Callable[[], None]) -> Coupling:
    try:
        check()
    except VerlCouplingError as exc:
        return Coupling(name, False, str(exc))
    return Coupling(name, True, "present")


def _is_instance(value: Any, kind: type, what: str) -> None:
    if not isinstance(value, kind):
        raise VerlCouplingError(f"verl's {what} is {type(value).__name__}, expected {kind.__name__}.")


def _check_builder_render() -> None:
    render = getattr(ContinuousTokenBuilder, "_render_tokens", None)
    params = inspect.signature(render).parameters if render is not None else {}
    if list(params)[:2] != ["self", "messages"] or "add_generation_prompt" not in params or "tools" not in params:
        raise VerlCouplingError(
            f"verl's ContinuousTokenBuilder._render_tokens is {list(params) or 'missing'}, expected "
            "(self, messages, *, add_generation_prompt, tools)."
        )


def _check_config_root() -> None:
    root = OmegaConf.create({"algorithm": {"gamma": 1.0}, "pearl": {}})
    if config_root(root.algorithm) is not root:
        raise VerlCouplingError("OmegaConf's DictConfig._get_root() no longer returns the tree's root.")


def _check_legacy_hooks() -> None:
    missing = [name for name in LEGACY_HOOKS if _lookup(ray_trainer, name) is None]
    if missing:
        raise VerlCouplingError(f"verl.trainer.ppo.ray_trainer lacks {', '.join(missing)} (trainer.use_v1=false).")


def _lookup(module: Any, dotted: str) -> Any:
    value = module
    for part in dotted.split("."):
        value = getattr(value, part, None)
    return value


warn_if_untested()
