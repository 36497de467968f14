"""Local Hugging Face models for evaluations: a chat backend over ``generate`` and a scalar reward model.

``HFChatBackend`` lets a model directory stand in for an endpoint (an evaluated tutor, a
MathTutorBench model) on one machine, CPU included, for small models; it generates through
:class:`~pearl_verl.models.hf_generate.HFGenerator`, as verl's ``hf`` rollout does, so concurrent dialogues share
batches and each keeps its keys and values between turns. ``HFRewardModel`` scores a conversation with a
sequence-classification head (``num_labels=1``), the interface of MathTutorBench's pedagogical reward model.
Both load from a local path only (nothing from a hub) and run the model in a worker thread, so the event loop
stays responsive; on the GPU when there is one (:func:`default_device`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

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
        seed: with the call's number and the sample's, seeds each sample (a call's ``sampling.seed`` replaces it),
            so runs are reproducible.
        device: torch device (None: :func:`default_device`).
    """

    def __init__(
        self, path: str | Path, sampling: SamplingConfig | None = None, seed: int = 0, device: str | None = None
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from pearl_verl.models.hf_generate import HFGenerator

        folder = _model_dir(path, "tutor model")
        self.name = folder.name
        self.sampling = sampling or SamplingConfig()
        self.seed = seed
        self.device = device or default_device()
        self.usage = UsageMeter()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        if not getattr(self.tokenizer, "chat_template", None):
            raise InputError(f"the tokenizer in {folder} has no chat template; use an instruction-tuned model.")
        model = AutoModelForCausalLM.from_pretrained(folder).to(self.device).eval()
        ends = model.generation_config.eos_token_id
        ends = set(ends if isinstance(ends, list) else [ends]) | {self.tokenizer.eos_token_id}
        self.end_ids = frozenset(ends - {None})
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        self.generator = HFGenerator(model, pad, self.end_ids)
        self._calls = 0

    async def chat(self, messages: Sequence[Message], sampling: SamplingConfig | None = None) -> ChatResult:
        """One completion per requested sample; raises :class:`LLMCallError` if generation fails."""
        from pearl_verl.models.hf_generate import Sampling

        sampling = sampling or self.sampling
        self._calls += 1
        start = time.perf_counter()
        try:
            prompt = self.tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                                        tokenize=True, return_dict=True)["input_ids"]
            cap = sampling.max_tokens or 512
            how = Sampling(sampling.temperature, sampling.top_p, sampling.top_k or 0)
            seeds = [sampling.seed + k if sampling.seed is not None else zlib.crc32(f"{self.seed}:{self._calls}:{k}".encode())
                     for k in range(sampling.n)]
            samples = await asyncio.gather(*(self.generator.sample(prompt, cap, how, seed) for seed in seeds))
        except (RuntimeError, ValueError) as exc:  # torch and tokenizer errors; counted, then flagged by callers
            self.usage.record(None, 1, time.perf_counter() - start, "local_generate")
            raise LLMCallError(f"local generation with {self.name} failed: {exc}", "local_generate", 1) from exc
        decoded = [self.tokenizer.decode(ids, skip_special_tokens=True) for ids, _ in samples]
        # "length" as a server says it: the cap reached with no end token and no stop string
        reasons = tuple(
            "length" if len(ids) >= cap and ids[-1] not in self.end_ids and not any(m in text for m in sampling.stop)
            else "stop"
            for (ids, _), text in zip(samples, decoded, strict=True)
        )
        result = ChatResult(
            texts=tuple(self._cut(text, sampling.stop) for text in decoded),
            finish_reasons=reasons,
            prompt_tokens=len(prompt),
            completion_tokens=sum(len(ids) for ids, _ in samples),
            latency_s=time.perf_counter() - start,
        )
        self.usage.record(result, 1, result.latency_s)
        return result

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
