"""Batched generation of a local Hugging Face model: the one place the project calls HF ``generate``.

Requests from concurrent coroutines (dialogues) are gathered into micro-batches (left-padded) and generated
together in a worker thread, so the rest of the event loop (a student simulator, other dialogues) keeps running
while the model generates; requests with other sampling settings wait for their own batch. Each dialogue's keys
and values are kept between its turns and found again by content (:mod:`pearl_verl.models.prefix_cache`), so a
turn encodes the student's new answer, not the whole dialogue again. verl's ``hf`` rollout
(:mod:`pearl_verl.verl_plugin.cpu.hf_server`) and the evaluations' local chat backend
(:mod:`pearl_verl.eval.hf_backend`) both generate here.

Each generated token comes with its log-probability under the model's logits divided by the
temperature (what verl's actor computes as the old log-prob; top-k/top-p truncation is not
applied to it), so verl's trainer can use them as ``rollout_log_probs``.

A request's seed (vLLM's per-request ``seed``) gives it its own random stream: what it samples does not
depend on which other requests share its batch, which batches form by timing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from pearl_verl.errors import InputError
from pearl_verl.models.prefix_cache import (
    DEFAULT_MAX_BYTES,
    Hit,
    PrefixCache,
    batch_cache,
    reusable,
    row_layers,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sampling:
    """How a request samples: ``temperature`` 0 is greedy; ``top_k`` 0 or less and ``top_p`` 1 keep every token."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0

    @classmethod
    def of(cls, params: dict[str, Any]) -> Sampling:
        """From vLLM-style sampling parameters (missing or None: the defaults; ``top_k`` -1 is vLLM's "all")."""
        def pick(key: str, default: float) -> float:
            value = params.get(key)
            return default if value is None else value

        return cls(float(pick("temperature", 1.0)), float(pick("top_p", 1.0)), int(pick("top_k", 0)))


@dataclass
class _Request:
    prompt_ids: list[int]
    max_tokens: int
    sampling: Sampling
    seed: int | None
    future: asyncio.Future


class _SampledLogProbs:
    """A logits processor that keeps the log-probability of each sampled token, not the whole vocabulary.

    It runs before :class:`_SeededSampler` (generation is greedy over what that returns, so transformers
    adds no sampling warpers), so it sees the model's logits; it divides them by the temperature itself.
    The token drawn from step t's scores appears as the last input id at step t+1, so each call gathers
    the previous step's choice; the final step's choice is gathered by :meth:`finish`.
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


class _SeededSampler:
    """Samples each row from its own generator, so a row's tokens do not depend on the rest of its batch.

    transformers' sampling draws the whole batch from torch's one generator: a row's draws then depend on
    which rows share the batch and in what order. Here the warped scores (temperature, top-k, top-p, the
    warpers transformers itself would apply) get Gumbel noise from the row's generator, and generation
    takes the argmax: the Gumbel-max trick, a draw from the same distribution. Run it last, with
    ``do_sample=False``.
    """

    def __init__(self, seeds: list[int], temperature: float, top_k: int | None, top_p: float | None) -> None:
        self.generators = [torch.Generator().manual_seed(seed) for seed in seeds]
        warpers = [TemperatureLogitsWarper(temperature)]
        if top_k:
            warpers.append(TopKLogitsWarper(top_k))
        if top_p is not None and top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p))
        self.warpers = LogitsProcessorList(warpers)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        warped = torch.log_softmax(self.warpers(input_ids, scores.float()), dim=-1)
        exponentials = torch.stack([torch.empty(scores.shape[-1]).exponential_(generator=g) for g in self.generators])
        # argmax(log p - log E), E ~ Exp(1), is a draw from p (-log E is Gumbel noise)
        return warped - exponentials.clamp_min(1e-30).log().to(scores.device)


class HFGenerator:
    """``await sample(prompt_ids, ...)`` -> (token ids, their log-probabilities), batched across callers.

    Args:
        model: a causal LM, in eval mode (for verl's rollout, a separate copy of the policy).
        pad_token_id: used for left padding.
        stop_token_ids: generation stops after any of these (end of turn).
        max_batch: most requests generated together.
        gather_s: how long a batch waits for one more request before it starts. 0 (one event loop
            holds every dialogue, as in train-local) gathers what is ready now; requests that come
            over Ray from an agent-loop worker arrive a few milliseconds apart and need a window.
        cache_bytes: most memory for the dialogues' kept keys and values (least recently used go first);
            0 keeps none, and every turn encodes its whole prompt.

    Each request samples from its own generator, seeded by its ``seed``; a request without a seed draws its
    seed from torch's global generator. Batches are generated one at a time in a single worker thread.
    """

    def __init__(self, model: torch.nn.Module, pad_token_id: int, stop_token_ids: Iterable[int], max_batch: int = 64,
                 gather_s: float = 0.0, cache_bytes: int = DEFAULT_MAX_BYTES):
        self.model = model
        self.gather_s = gather_s
        self.pad_token_id = pad_token_id
        self.stop_token_ids = sorted(set(stop_token_ids))
        self.max_batch = max_batch
        self.generated_tokens = 0
        self.prefix_cache = PrefixCache(cache_bytes) if cache_bytes > 0 and reusable(model) else None
        self._pending: list[_Request] = []
        self._worker: asyncio.Task | None = None

    async def sample(self, prompt_ids: list[int], max_tokens: int, sampling: Sampling = Sampling(),
                     seed: int | None = None) -> tuple[list[int], list[float]]:
        """The request's tokens (up to and including its first stop token, at most ``max_tokens``) and each one's
        log-probability under the model's logits divided by the temperature."""
        loop = asyncio.get_running_loop()
        request = _Request(list(prompt_ids), int(max_tokens), sampling, None if seed is None else int(seed),
                           loop.create_future())
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await request.future

    @torch.no_grad()
    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Copy the trained policy's weights into the rollout model (same parameter names)."""
        own = self.model.state_dict()
        missing = set(own) - set(state_dict)
        if missing:
            raise InputError(f"weights to load lack {sorted(missing)[:3]}... ({len(missing)} tensors)")
        for name, tensor in own.items():
            tensor.copy_(state_dict[name].to(tensor.device, tensor.dtype))
        self.clear_cache()  # computed by the old weights

    def clear_cache(self) -> None:
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    async def _drain(self) -> None:
        # Wait until no new request arrives, so concurrent episodes share a batch.
        count = -1
        while count != len(self._pending) and len(self._pending) < self.max_batch:
            count = len(self._pending)
            await asyncio.sleep(self.gather_s)
        loop = asyncio.get_running_loop()
        while self._pending:
            # one batch samples one way: the first waiting request's, the others wait for their own batch
            first = self._pending[0].sampling
            batch = [r for r in self._pending if r.sampling == first][: self.max_batch]
            taken = set(map(id, batch))
            self._pending = [r for r in self._pending if id(r) not in taken]
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
        cache = self.prefix_cache
        hits = [cache.lookup(r.prompt_ids) if cache else Hit() for r in batch]
        cached = max(hit.length for hit in hits)
        width = cached + max(len(r.prompt_ids) - hit.length for r, hit in zip(batch, hits))
        # Row layout: [padding, reused prefix | padding, tokens to encode]; the mask hides both paddings.
        ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (request, hit) in enumerate(zip(batch, hits)):
            length, fresh = hit.length, len(request.prompt_ids) - hit.length
            ids[row, cached - length : cached] = torch.tensor(request.prompt_ids[:length], dtype=torch.long)
            ids[row, width - fresh :] = torch.tensor(request.prompt_ids[length:], dtype=torch.long)
            mask[row, cached - length : cached] = 1
            mask[row, width - fresh :] = 1
        sampling = batch[0].sampling
        temperature = sampling.temperature
        log_probs = _SampledLogProbs(temperature)
        processors: list[Any] = [log_probs]
        if temperature > 0:
            seeds = [int(torch.randint(2**62, ())) if r.seed is None else r.seed for r in batch]
            processors.append(_SeededSampler(seeds, temperature, sampling.top_k if sampling.top_k > 0 else None,
                                             sampling.top_p))
        out = self.model.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            past_key_values=batch_cache(hits, cached) if cached else None,
            return_dict_in_generate=True,
            max_new_tokens=max(r.max_tokens for r in batch),
            do_sample=False,  # the seeded sampler has drawn: generation takes its argmax
            eos_token_id=self.stop_token_ids,
            pad_token_id=self.pad_token_id,
            logits_processor=processors,
        )
        sampled = out.sequences
        chosen = log_probs.finish(sampled[:, -1]).tolist()
        results = [
            self._trim(sampled[row, width:].tolist(), chosen[row], request.max_tokens) for row, request in enumerate(batch)
        ]
        if cache is not None and out.past_key_values is not None:
            # The last sampled token was never fed to the model: the cache ends one token before it.
            encoded = out.past_key_values.get_seq_length() - width
            for row, (request, hit, (token_ids, _)) in enumerate(zip(batch, hits, results)):
                kept = min(len(token_ids), encoded)
                where = torch.cat([mask[row].nonzero().squeeze(1), torch.arange(width, width + kept)]).to(device)
                cache.store(request.prompt_ids + token_ids[:kept], row_layers(out.past_key_values, row, where),
                            replaces=hit.source if hit.covers_source else None)
        return results

    def _trim(self, new_ids: list[int], log_probs: list[float], max_tokens: int) -> tuple[list[int], list[float]]:
        """The request's own tokens: up to and including its first stop token, within its cap."""
        for i, token in enumerate(new_ids[:max_tokens]):
            if token in self.stop_token_ids:
                self.generated_tokens += i + 1
                return new_ids[: i + 1], log_probs[: i + 1]
        self.generated_tokens += min(len(new_ids), max_tokens)
        return new_ids[:max_tokens], log_probs[:max_tokens]
