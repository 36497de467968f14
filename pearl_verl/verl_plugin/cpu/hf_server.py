"""A rollout server for one machine: verl's server-manager ``generate`` interface over HF ``generate``.

Episodes run concurrently in one event loop; their tutor-generation requests are gathered into
micro-batches (left-padded) and generated together in a worker thread, so the student simulator
keeps running while the model generates. Weights are a separate copy of the policy, refreshed
from the training engine after every update, as verl's rollout replicas are.

Each generated token comes with its log-probability under the model's logits divided by the
temperature (what verl's actor computes as the old log-prob; top-k/top-p truncation is not
applied to it), so verl's trainer can use them as ``rollout_log_probs``.
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


class _SampledLogProbs:
    """A logits processor that keeps the log-probability of each sampled token, not the whole vocabulary.

    transformers runs custom processors before its sampling warpers, so it sees the model's logits;
    it divides them by the temperature itself. The token drawn from step t's scores appears as the
    last input id at step t+1, so each call gathers the previous step's choice; the final step's
    choice is gathered by :meth:`finish`.
    """

    def __init__(self, temperature: float) -> None:
        self.temperature = temperature if temperature > 0 else 1.0
        self.chosen: list[torch.Tensor] = []
        self._last: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self._gather(input_ids[:, -1])
        self._last = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def finish(self, last_tokens: torch.Tensor) -> torch.Tensor:
        """(batch, generated) log-probabilities, once generation returned its sequences."""
        self._gather(last_tokens)
        return torch.stack(self.chosen, dim=1) if self.chosen else torch.zeros((len(last_tokens), 0))

    def _gather(self, tokens: torch.Tensor) -> None:
        if self._last is not None:
            self.chosen.append(self._last.gather(1, tokens.view(-1, 1).to(self._last.device)).squeeze(1).cpu())
            self._last = None


class HFGenerateServer:
    """``generate(request_id, *, prompt_ids, sampling_params)`` -> ``TokenOutput``, batched.

    Args:
        model: a causal LM (the rollout copy of the policy), in eval mode.
        pad_token_id: used for left padding.
        stop_token_ids: generation stops after any of these (end of turn).
        max_batch: most requests generated together.
        gather_s: how long a batch waits for one more request before it starts. 0 (one event loop
            holds every episode, as in train-local) gathers what is ready now; requests that come
            over Ray from an agent-loop worker arrive a few milliseconds apart and need a window.

    Sampling draws from torch's global generator: seed it (``torch.manual_seed``) for reproducible
    rollouts; batches are generated one at a time in a single worker thread.
    """

    def __init__(self, model: torch.nn.Module, pad_token_id: int, stop_token_ids: Iterable[int], max_batch: int = 64,
                 gather_s: float = 0.0):
        self.model = model
        self.gather_s = gather_s
        self.pad_token_id = pad_token_id
        self.stop_token_ids = sorted(set(stop_token_ids))
        self.max_batch = max_batch
        self.generated_tokens = 0
        self.global_steps: int | None = None  # the trainer step whose weights generate (verl's extra field)
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
        token_ids, log_probs = await request.future
        return TokenOutput(
            token_ids=token_ids, log_probs=log_probs, stop_reason="completed", extra_fields={"global_steps": self.global_steps}
        )

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
        # Wait until no new request arrives, so concurrent episodes share a batch.
        count = -1
        while count != len(self._pending) and len(self._pending) < self.max_batch:
            count = len(self._pending)
            await asyncio.sleep(self.gather_s)
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
            for request, result in zip(batch, outputs):
                request.future.set_result(result)

    @torch.no_grad()
    def _generate(self, batch: list[_Request]) -> list[tuple[list[int], list[float]]]:
        device = next(self.model.parameters()).device
        width = max(len(r.prompt_ids) for r in batch)
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, request in enumerate(batch):
            ids[row, width - len(request.prompt_ids) :] = torch.tensor(request.prompt_ids)
            mask[row, width - len(request.prompt_ids) :] = 1
        temperature = float(self._sampling.get("temperature") or 0.0)
        top_k = self._sampling.get("top_k")
        log_probs = _SampledLogProbs(temperature)
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
            logits_processor=[log_probs],
        )
        chosen = log_probs.finish(sampled[:, -1]).tolist()
        return [
            self._trim(sampled[row, width:].tolist(), chosen[row], request.max_tokens) for row, request in enumerate(batch)
        ]

    def _trim(self, new_ids: list[int], log_probs: list[float], max_tokens: int) -> tuple[list[int], list[float]]:
        """The request's own tokens: up to and including its first stop token, within its cap."""
        for i, token in enumerate(new_ids[:max_tokens]):
            if token in self.stop_token_ids:
                self.generated_tokens += i + 1
                return new_ids[: i + 1], log_probs[: i + 1]
        self.generated_tokens += min(len(new_ids), max_tokens)
        return new_ids[:max_tokens], log_probs[:max_tokens]
