"""Local Hugging Face models for evaluations: a chat backend over ``generate`` and a scalar reward model.

``HFChatBackend`` lets a model directory stand in for an endpoint (an evaluated tutor, a
MathTutorBench model) on one machine, CPU included, for small models. ``HFRewardModel`` scores a
conversation with a sequence-classification head (``num_labels=1``), the interface of
MathTutorBench's pedagogical reward model. Both load from a local path only (nothing from a hub)
and run one forward pass at a time in a worker thread, so the event loop stays responsive; on the
GPU when there is one (:func:`default_device`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import ChatResult, LLMCallError, Message, SamplingConfig, UsageMeter

logger = logging.getLogger(__name__)


def default_device() -> str:
    """``cuda`` where torch sees a GPU, else ``cpu``: a local tutor or reward model runs where it runs fastest."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _model_dir(path: str | Path, what: str) -> Path:
    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise InputError(
            f"{what} path {str(folder)!r} is not a Hugging Face model directory (no config.json); pass a local "
            "directory saved with save_pretrained (download hub models beforehand, e.g. with huggingface-cli)."
        )
    return folder


class HFChatBackend:
    """A :class:`~pearl_verl.llm.chat_types.ChatBackend` over a local causal LM's chat template and ``generate``.

    Args:
        path: a model directory with a tokenizer that has a chat template.
        sampling: default sampling (temperature 0 means greedy decoding).
        seed: seeds torch before each call, so runs are reproducible.
        device: torch device (None: :func:`default_device`).
    """

    def __init__(
        self, path: str | Path, sampling: SamplingConfig | None = None, seed: int = 0, device: str | None = None
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = _model_dir(path, "tutor model")
        self.name = folder.name
        self.sampling = sampling or SamplingConfig()
        self.seed = seed
        self.device = device or default_device()
        self.usage = UsageMeter()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        if not getattr(self.tokenizer, "chat_template", None):
            raise InputError(f"the tokenizer in {folder} has no chat template; use an instruction-tuned model.")
        self.model = AutoModelForCausalLM.from_pretrained(folder).to(self.device).eval()
        self._lock = threading.Lock()
        self._calls = 0

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        """One completion per requested sample; raises :class:`LLMCallError` if generation fails."""
        sampling = sampling or self.sampling
        start = time.perf_counter()
        try:
            texts, reasons, prompt_tokens, completion_tokens = await asyncio.get_running_loop().run_in_executor(
                None, self._generate, [dict(m) for m in messages], sampling
            )
        except (RuntimeError, ValueError) as exc:  # torch and tokenizer errors; counted, then flagged by callers
            self.usage.record(None, 1, time.perf_counter() - start, "local_generate")
            raise LLMCallError(f"local generation with {self.name} failed: {exc}", "local_generate", 1) from exc
        result = ChatResult(
            texts=tuple(texts),
            finish_reasons=reasons,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - start,
        )
        self.usage.record(result, 1, result.latency_s)
        return result

    def _generate(
        self, messages: list[dict[str, str]], sampling: SamplingConfig
    ) -> tuple[list[str], tuple[str, ...], int, int]:
        """(texts, finish reasons as a server gives them, prompt tokens, completion tokens)."""
        import torch

        with self._lock:
            self._calls += 1
            torch.manual_seed(self.seed * 1_000_003 + self._calls if sampling.seed is None else sampling.seed)
            ids = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )["input_ids"].to(self.device)
            greedy = sampling.temperature == 0
            options: dict[str, Any] = {
                "max_new_tokens": sampling.max_tokens or 512,
                "do_sample": not greedy,
                "num_return_sequences": sampling.n,
                "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            }
            if not greedy:
                options.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or 0)
            with torch.no_grad():
                out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **options)
            new = out[:, ids.shape[1] :]
            decoded = [self.tokenizer.decode(row, skip_special_tokens=True) for row in new]
            ends = {self.tokenizer.eos_token_id, options["pad_token_id"]} - {None}
            # "length" as a server says it: the cap reached with no end token and no stop string
            reasons = tuple(
                "length" if len(row) >= options["max_new_tokens"] and int(row[-1]) not in ends
                and not any(marker in text for marker in sampling.stop) else "stop"
                for row, text in zip(new, decoded, strict=True)
            )
            texts = [self._cut(text, sampling.stop) for text in decoded]
            return texts, reasons, int(ids.shape[1]), int(new.numel())

    @staticmethod
    def _cut(text: str, stop: Sequence[str]) -> str:
        for marker in stop:
            index = text.find(marker)
            if index >= 0:
                text = text[:index]
        return text.strip()


class HFRewardModel:
    """A scalar reward model: the logit of a ``num_labels=1`` sequence-classification head.

    This is how MathTutorBench's pedagogical reward model scores a conversation; higher is better.

    Args:
        path: a model directory (``AutoModelForSequenceClassification`` with one label) whose
            tokenizer has a chat template.
        device: torch device (None: :func:`default_device`).
    """

    def __init__(self, path: str | Path, device: str | None = None) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        folder = _model_dir(path, "reward model")
        self.name = folder.name
        self.device = device or default_device()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1).to(self.device).eval()
        if self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = self.tokenizer.pad_token_id or self.tokenizer.eos_token_id
        self._lock = threading.Lock()

    async def score(self, messages: Sequence[Message]) -> float:
        """The reward of one conversation (the whole message list, the scored reply last)."""
        return await asyncio.get_running_loop().run_in_executor(None, self._score, [dict(m) for m in messages])

    def _score(self, messages: list[dict[str, str]]) -> float:
        import torch

        with self._lock, torch.no_grad():
            ids = self.tokenizer.apply_chat_template(messages, return_tensors="pt", return_dict=True)["input_ids"]
            logits = self.model(input_ids=ids.to(self.device)).logits
            return float(logits[0, 0])
