"""The CPU fix of verl's weight sync into vLLM, on verl's real sender and receiver over a real ZMQ socket.

The vLLM side is a loader that keeps every tensor it is handed until the end, as vLLM's layerwise
reload does until a layer is complete; buckets of 1 MB split the weights into several. Each test
runs the sender in a thread and the receiver in this one, over shared memory, as on a CPU.
"""

import asyncio
import threading
import uuid

import pytest
import torch
from verl.workers.rollout.vllm_rollout import bucketed_weight_transfer as transfer

from pearl_verl.verl_plugin.cpu import vllm_sync
from pearl_verl.verl_plugin.cpu.platform import PlatformHostCPU
from pearl_verl.verl_plugin.cpu.vllm_sync import BoundedWeightSender, WeightSyncError, receive_buckets


@pytest.fixture(autouse=True)
def host_cpu_device(monkeypatch):
    """verl's transfer module asks its platform for the device: the host CPU's, as in a VERL_PLATFORM=cpu process."""
    monkeypatch.setattr(transfer, "get_torch_device", lambda: PlatformHostCPU().device_module)
    monkeypatch.setattr(transfer, "is_support_ipc", PlatformHostCPU().is_ipc_supported)


def _weights(count: int = 6, numel: int = 80_000) -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [(f"layer{i}.weight", torch.randn(numel, generator=generator)) for i in range(count)]  # 320 KB each


def _handle() -> str:
    return f"ipc:///tmp/pearl-test-sync-{uuid.uuid4().hex}.sock"


def _send_in_thread(handle: str, weights, timeout_s: float = 60.0) -> tuple[threading.Thread, list]:
    errors: list[BaseException] = []

    def send() -> None:
        sender = BoundedWeightSender(zmq_handle=handle, bucket_size_mb=1, use_shm=True, timeout_s=timeout_s)
        try:
            asyncio.run(sender.async_send_weights(iter(weights)))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread, errors


def _receiver(handle: str) -> transfer.BucketedWeightReceiver:
    return transfer.BucketedWeightReceiver(zmq_handle=handle, device=torch.device("cpu"), use_shm=True)


class LayerwiseLoader:
    """Keeps each bucket's tensors until the next bucket arrives (vLLM holds a layer's weights until it is whole),
    and records whether they still held what was sent by then."""

    def __init__(self, sent):
        self.sent = dict(sent)
        self.pending: list = []
        self.buckets = 0
        self.intact: list[bool] = []

    def __call__(self, bucket, is_last=None):
        self.check()
        self.buckets += 1
        self.pending = list(bucket)

    def check(self):
        self.intact += [torch.equal(tensor, self.sent[name]) for name, tensor in self.pending]
        self.pending = []


def test_every_bucket_arrives_intact_while_the_loader_keeps_earlier_ones():
    weights = _weights()
    loader, handle = LayerwiseLoader(weights), _handle()
    thread, errors = _send_in_thread(handle, weights)
    receive_buckets(_receiver(handle), loader)
    loader.check()
    thread.join(timeout=60)
    assert not errors and not thread.is_alive()
    assert loader.buckets >= 2  # 6 x 320 KB in 1 MB buckets
    assert loader.intact == [True] * len(weights)


def test_verls_receiver_alone_hands_out_views_that_the_next_bucket_overwrites():
    """Why the copy is needed: kept as verl hands them, a bucket's tensors hold the next bucket's bytes.

    If verl ever copies them itself, this fails and the copy in receive_buckets can go.
    """
    weights = _weights()
    loader, handle = LayerwiseLoader(weights), _handle()
    thread, errors = _send_in_thread(handle, weights)
    receiver = _receiver(handle)
    receiver.receive_weights(on_bucket_received=lambda bucket, is_last: loader(bucket) if not is_last else
                             (loader(bucket), loader.check()))
    thread.join(timeout=60)
    assert not errors and loader.buckets >= 2
    assert False in loader.intact


def test_a_loader_that_fails_releases_the_sender_then_raises_the_cause():
    handle = _handle()
    thread, errors = _send_in_thread(handle, _weights())

    def fail(bucket):
        raise AttributeError("'Parameter' object has no attribute 'weight_loader'")

    with pytest.raises(WeightSyncError, match="could not load the synced weights: AttributeError: 'Parameter'"):
        receive_buckets(_receiver(handle), fail)
    thread.join(timeout=60)
    assert not errors and not thread.is_alive()  # the sender got every acknowledgement: no hang


def test_a_sender_whose_receiver_never_answers_stops_within_its_bound():
    handle = _handle()
    thread, errors = _send_in_thread(handle, _weights(), timeout_s=1.0)  # nobody receives
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(errors) == 1 and type(errors[0]).__name__ == "Again"  # zmq's timeout, which the adapter names


@pytest.mark.parametrize(("raw", "expected"), [("", vllm_sync.DEFAULT_SYNC_TIMEOUT_S), ("2.5", 2.5)])
def test_sync_timeout_setting(monkeypatch, raw, expected):
    monkeypatch.setenv(vllm_sync.SYNC_TIMEOUT_ENV, raw)
    assert vllm_sync.sync_timeout_s() == expected


@pytest.mark.parametrize("raw", ["soon", "0", "-1", "nan"])
def test_sync_timeout_setting_rejects_what_is_no_bound(monkeypatch, raw):
    monkeypatch.setenv(vllm_sync.SYNC_TIMEOUT_ENV, raw)
    with pytest.raises(WeightSyncError, match=vllm_sync.SYNC_TIMEOUT_ENV):
        vllm_sync.sync_timeout_s()


class _FailedCall:
    """A Ray call (``ObjectRef``) that ended with ``error``: awaitable, and ``future()`` as Ray's."""

    def __init__(self, error: BaseException) -> None:
        import concurrent.futures

        self._future = concurrent.futures.Future()
        self._future.set_exception(error)

    def future(self):
        return self._future

    def __await__(self):
        return asyncio.wrap_future(self._future).__await__()


def _adapter(handle: str, call) -> vllm_sync.CPUServerAdapter:
    from omegaconf import OmegaConf

    adapter = object.__new__(vllm_sync.CPUServerAdapter)  # verl's constructor needs Ray and a rank; the sync does not
    adapter.zmq_handle, adapter.use_shm, adapter._has_server = handle, True, False
    adapter.replica_rank = adapter.rollout_rank = 0
    adapter.config = OmegaConf.create({"checkpoint_engine": {"update_weights_bucket_megabytes": 1}})

    async def execute(method, non_block=False, timeout=None, args=(), kwargs=None):
        assert method == "update_weights_from_ipc" and non_block and kwargs == {"use_shm": True}
        return call

    adapter._execute_method = execute
    return adapter


def test_the_adapter_names_the_servers_error_when_the_sync_times_out(monkeypatch):
    monkeypatch.setenv(vllm_sync.SYNC_TIMEOUT_ENV, "1")
    server_error = RuntimeError("EngineCore died: out of memory")
    adapter = _adapter(_handle(), _FailedCall(server_error))
    with pytest.raises(WeightSyncError, match=r"took no bucket for 1 s .*RuntimeError: EngineCore died"):
        asyncio.run(adapter.update_weights(iter(_weights(count=2))))


def test_the_adapter_raises_the_servers_error_after_a_sync_that_failed_there():
    handle = _handle()
    received = threading.Thread(target=lambda: receive_buckets(_receiver(handle), lambda bucket: None), daemon=True)
    received.start()
    adapter = _adapter(handle, _FailedCall(WeightSyncError("the vLLM rollout could not load the synced weights")))
    with pytest.raises(WeightSyncError, match="weight sync into the vLLM rollout failed: the vLLM rollout could not"):
        asyncio.run(adapter.update_weights(iter(_weights(count=2))))
    received.join(timeout=60)
