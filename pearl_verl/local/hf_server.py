"""A rollout server for one machine: verl's server-manager ``generate`` interface over HF ``generate``.

Episodes run concurrently in one event loop; their tutor-generation requests are gathered into
micro-batches (left-padded) and generated together in a worker thread, so the student simulator
keeps running while the model generates. Weights are a separate copy of the policy, refreshed
from the training engine after every update, as verl's rollout replicas are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from verl.workers.rollout.replica import TokenOutput

from pearl_verl.errors import InputError

logger = logging.getLogger(__name__)


@dataclass
class _Request:
    prompt_ids: list[int]
    max_tokens: int
    future: asyncio.Future


class HFGenerateServer:
    """``generate(request_id, *, prompt_ids, sampling_params)`` -> ``TokenOutput``, batched.

    Args:
        model: a causal LM (the rollout copy of the policy), in eval mode.
        pad_token_id: used for left padding.
        stop_token_ids: generation stops after any of these (end of turn).
        max_batch: most requests generated together.

    Sampling draws from torch's global generator: seed it (``torch.manual_seed``) for reproducible
    rollouts; batches are generated one at a time in a single worker thread.
    """

    def __init__(self, model: torch.nn.Module, pad_token_id: int, stop_token_ids: Iterable[int], max_batch: int = 64):
        self.model = model
        self.pad_token_id = pad_token_id
        self.stop_token_ids = sorted(set(stop_token_ids))
        self.max_batch = max_batch
        self.generated_tokens = 0
        self._pending: list[_Request] = []
        self._sampling: dict[str, Any] = {}
        self._worker: asyncio.Task | None = None

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        loop = asyncio.get_running_loop()
        request = _Request(list(prompt_ids), int(sampling_params.get("max_tokens") or 256), loop.create_future())
        self._sampling = {k: sampling_params.get(k) for k in ("temperature", "top_p", "top_k")}
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        token_ids = await request.future
        return TokenOutput(token_ids=token_ids, log_probs=None, stop_reason="completed", extra_fields={})

    @torch.no_grad()
    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Copy the trained policy's weights into the rollout model (same parameter names)."""
        own = self.model.state_dict()
        missing = set(own) - set(state_dict)
        if missing:
            raise InputError(f"weights to load lack {sorted(missing)[:3]}... ({len(missing)} tensors)")
        for name, tensor in own.items():
            tensor.copy_(state_dict[name].to(tensor.device, tensor.dtype))

    async def _drain(self) -> None:
        # Yield to the event loop until no new request arrives, so concurrent episodes share a batch.
        count = -1
        while count != len(self._pending):
            count = len(self._pending)
            await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            try:
                outputs = await loop.run_in_executor(None, self._generate, batch)
            except Exception as exc:  # a failed batch fails its requests, not the whole run
                logger.exception("local generation failed")
                for request in batch:
                    request.future.set_exception(exc)
                continue
            for request, ids in zip(batch, outputs):
                request.future.set_result(ids)

    @torch.no_grad()
    def _generate(self, batch: list[_Request]) -> list[list[int]]:
        device = next(self.model.parameters()).device
        width = max(len(r.prompt_ids) for r in batch)
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, request in enumerate(batch):
            ids[row, width - len(request.prompt_ids) :] = torch.tensor(request.prompt_ids)
            mask[row, width - len(request.prompt_ids) :] = 1
        temperature = float(self._sampling.get("temperature") or 0.0)
        top_k = self._sampling.get("top_k")
        sampled = self.model.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=max(r.max_tokens for r in batch),
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=self._sampling.get("top_p") if temperature > 0 else None,
            top_k=top_k if (temperature > 0 and top_k and top_k > 0) else None,
            eos_token_id=self.stop_token_ids,
            pad_token_id=self.pad_token_id,
        )
        return [self._trim(sampled[row, width:].tolist(), request.max_tokens) for row, request in enumerate(batch)]

    def _trim(self, new_ids: list[int], max_tokens: int) -> list[int]:
        """The request's own tokens: up to and including its first stop token, within its cap."""
        for i, token in enumerate(new_ids[:max_tokens]):
            if token in self.stop_token_ids:
                self.generated_tokens += i + 1
                return new_ids[: i + 1]
        self.generated_tokens += min(len(new_ids), max_tokens)
        return new_ids[:max_tokens]
