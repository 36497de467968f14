"""A rollout server for one machine: verl's server-manager ``generate`` interface over HF ``generate``.

Episodes run concurrently in one event loop; their tutor turns are generated in batches by
:class:`~pearl_verl.models.hf_generate.HFGenerator` (each dialogue's keys and values kept between its turns, each
request sampled from its own seed, each token with its log-probability under logits / temperature, which verl's
trainer uses as ``rollout_log_probs``). Weights are a separate copy of the policy, refreshed from the training
engine after every update, as verl's rollout replicas are.
"""

from __future__ import annotations

from typing import Any

from verl.workers.rollout.replica import TokenOutput

from pearl_verl.models.hf_generate import HFGenerator, Sampling


class HFGenerateServer(HFGenerator):
    """``generate(request_id, *, prompt_ids, sampling_params)`` -> ``TokenOutput``, as verl's server manager calls it.

    ``sampling_params`` are vLLM's: ``temperature``, ``top_p``, ``top_k``, ``max_tokens`` and the per-request
    ``seed`` (the agent loop gives every tutor turn one). Arguments as :class:`HFGenerator`'s.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.global_steps: int | None = None  # the trainer step whose weights generate (verl's extra field)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any) -> TokenOutput:
        token_ids, log_probs = await self.sample(
            prompt_ids, int(sampling_params.get("max_tokens") or 256), Sampling.of(sampling_params), sampling_params.get("seed")
        )
        return TokenOutput(
            token_ids=token_ids, log_probs=log_probs, stop_reason="completed", extra_fields={"global_steps": self.global_steps}
        )
