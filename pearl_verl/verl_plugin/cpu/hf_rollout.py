"""``actor_rollout_ref.rollout.name=hf``: a verl rollout backend over Hugging Face ``generate``, for CPU runs.

verl 0.9.1 registers vLLM, SGLang and TensorRT-LLM only, none of which runs on this project's CPU
machines, and its ``HFRollout``/``NaiveRollout`` are in no registry. This backend plugs into the
same two registries as vLLM does, in hybrid mode (rollout and actor share the workers):

- :class:`HFRolloutReplica` (``RolloutReplicaRegistry``) starts one :class:`HFRolloutServer` Ray
  actor per replica, which the agent loop's server manager calls ``generate`` on;
- :class:`HFServerAdapter` (the rollout-class registry) lives in each actor worker; verl's weight
  sync hands it the trained weights, which it packs back into Hugging Face names and sends to
  the server.

The server batches concurrent requests (:class:`pearl_verl.verl_plugin.cpu.hf_server.HFGenerateServer`) and
returns each token's log-probability, so ``rollout.calculate_log_probs`` works. It keeps each episode's
keys and values between turns when ``rollout.enable_prefix_caching`` is on (verl's default, vLLM's own
switch), and frees them when verl clears or releases the KV cache, on weight updates and on sleep; it has
no weights to offload.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any

import ray
import torch
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput

from pearl_verl.verl_plugin.cpu.memory import release_freed_memory

logger = logging.getLogger(__name__)

BACKEND = "hf"
_SERVER_PREFIX = "pearl_hf_server_"
GATHER_S = 0.005
"""A batch waits this long for one more request: the agent loop's requests reach the server over Ray, apart."""
_EXPERT = re.compile(r"^(?P<base>.*\.mlp\.experts)\.(?P<expert>\d+)\.(?P<proj>gate_proj|up_proj|down_proj)\.weight$")


def server_name(replica_rank: int) -> str:
    """The Ray actor name of a replica's server (the adapter finds it by name, as vLLM's does)."""
    return f"{_SERVER_PREFIX}{replica_rank}"


class HFRolloutServer:
    """One replica's generation server: an HF model in this Ray actor, batched ``generate``."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int = 0, **_: Any) -> None:
        self.config = config
        self.model_config = model_config
        self.replica_rank = replica_rank
        self.server: Any = None
        self.weight_updates = 0

    def launch_server(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from verl.utils.fs import copy_to_local

        from pearl_verl.models.prefix_cache import DEFAULT_MAX_BYTES
        from pearl_verl.verl_plugin.agent_loop import special_ids
        from pearl_verl.verl_plugin.cpu.hf_server import HFGenerateServer

        path = copy_to_local(self.model_config.path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        dtype = getattr(torch, str(self.config.dtype))
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        stops = set(special_ids(tokenizer)[0])
        if tokenizer.eos_token_id is not None:
            stops.add(tokenizer.eos_token_id)
        kept = DEFAULT_MAX_BYTES if getattr(self.config, "enable_prefix_caching", True) else 0
        self.server = HFGenerateServer(model, pad, stops, max_batch=int(self.config.max_num_seqs), gather_s=GATHER_S,
                                       cache_bytes=kept)
        torch.manual_seed(int(self.config.seed) + self.replica_rank)  # rollout.seed, as vLLM's sampling seed
        # Ray starts this actor (num_cpus=0) with OMP_NUM_THREADS=1, so torch would generate on one core; the trainer
        # waits while its rollout runs, and the held-out validation is all generation: let it use every core
        torch.set_num_threads(len(os.sched_getaffinity(0)))

    async def generate(
        self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str, **kwargs: Any
    ) -> TokenOutput:
        return await self.server.generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> int:
        """Load the trained weights; returns how many updates this server has received."""
        self.server.load_weights(state_dict)
        del state_dict
        release_freed_memory()  # once a step: what the step's generation freed goes back to the OS
        self.weight_updates += 1
        return self.weight_updates

    def set_global_steps(self, global_steps: int) -> None:
        self.server.global_steps = global_steps

    # verl's server controls: the episodes' kept keys and values are all there is to free; nothing to pause.
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        self.server.clear_cache()

    async def clear_kv_cache(self) -> None:
        self.server.clear_cache()

    async def release_kv_cache(self) -> None:
        self.server.clear_cache()

    async def resume_kv_cache(self) -> None:
        return None

    async def wait_for_requests_to_drain(self) -> None:
        return None

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict[str, Any]:
        if reset_prefix_cache:
            self.server.clear_cache()
        return {"aborted_count": 0, "request_ids": []}

    async def resume_generation(self) -> None:
        return None

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


class HFRolloutReplica(RolloutReplica):
    """verl's rollout replica for the ``hf`` backend (hybrid mode: actor workers do the weight sync)."""

    async def launch_servers(self) -> None:
        if self.rollout_mode is None or self.rollout_mode.value != "hybrid":
            raise NotImplementedError(
                f"rollout.name={BACKEND} runs beside the actor (hybrid engine) only, not in {self.rollout_mode} mode"
            )
        server = (
            ray.remote(HFRolloutServer)
            .options(name=server_name(self.replica_rank), max_concurrency=self.max_concurrency, num_cpus=0)
            .remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        )
        await server.launch_server.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{BACKEND}-replica-{self.replica_rank}"


class HFServerAdapter(BaseRollout):
    """The actor worker's side of the ``hf`` backend: receives verl's weight sync, forwards it to the server."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, replica_rank: int = -1) -> None:
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        replica_world = (
            self.config.tensor_model_parallel_size * self.config.data_parallel_size * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // replica_world if replica_rank == -1 else replica_rank
        self.sends = rank % replica_world == 0  # every rank gathers the full weights; one sends them
        self._server: Any = None

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(self, weights: Any, global_steps: int | None = None, wire_format: str = "named_tensors", **kwargs: Any) -> None:
        if wire_format != "named_tensors":
            raise NotImplementedError(f"rollout.name={BACKEND} takes full weights (named_tensors), not {wire_format}")
        # Iterate on every rank: gathering a sharded parameter is a collective.
        state = {name: tensor.detach().to("cpu", copy=True) async for name, tensor in _aiter(weights)}
        if self.sends:
            if self._server is None:
                self._server = ray.get_actor(server_name(self.replica_rank))
            await self._server.load_weights.remote(pack_experts(state))
            if global_steps is not None:
                await self._server.set_global_steps.remote(global_steps)
        del state
        # The sync follows every update, in the actor's process: hand what the step freed back to the OS,
        # or glibc keeps it and a real model's worker grows by about a GB a step (memory.py).
        release_freed_memory()


def pack_experts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Undo verl's per-expert split (vLLM's checkpoint names) into transformers 5's packed expert tensors.

    ``...mlp.experts.{i}.gate_proj/up_proj/down_proj.weight`` become ``...mlp.experts.gate_up_proj``
    (``[E, 2I, H]``, gate then up) and ``...mlp.experts.down_proj`` (``[E, H, I]``); other names pass.
    """
    packed: dict[str, torch.Tensor] = {}
    experts: dict[str, dict[str, dict[int, torch.Tensor]]] = {}
    for name, tensor in state.items():
        match = _EXPERT.match(name)
        if match is None:
            packed[name] = tensor
            continue
        experts.setdefault(match["base"], {}).setdefault(match["proj"], {})[int(match["expert"])] = tensor
    for base, projections in experts.items():
        def stacked(proj: str, projections: dict = projections, base: str = base) -> torch.Tensor:
            by_expert = projections.get(proj, {})
            if sorted(by_expert) != list(range(len(by_expert))) or not by_expert:
                raise ValueError(f"{base}: experts of {proj} are {sorted(by_expert)}, not 0..N-1")
            return torch.stack([by_expert[i] for i in range(len(by_expert))])

        packed[f"{base}.gate_up_proj"] = torch.cat([stacked("gate_proj"), stacked("up_proj")], dim=1)
        packed[f"{base}.down_proj"] = stacked("down_proj")
    return packed


async def _aiter(weights: Iterable | AsyncIterator) -> AsyncIterator:
    if hasattr(weights, "__aiter__"):
        async for item in weights:
            yield item
    else:
        for item in weights:
            yield item
