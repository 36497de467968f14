"""The sizes the capacity plan needs, from a Hugging Face ``config.json`` (dense or mixture-of-experts).

Counts follow the Qwen3 / Llama decoder: per layer, attention projections q, k, v, o (no biases),
two RMSNorms, and a SwiGLU MLP (gate, up, down) or, for MoE, ``num_experts`` such MLPs of width
``moe_intermediate_size`` with a router, of which ``num_experts_per_tok`` run per token. The
shipped configs (``pearl_verl/resources/models``) give the paper's models: the formulas reproduce
their published sizes (tests/cluster/test_model_specs.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError

SHIPPED = Path(__file__).resolve().parents[1] / "resources" / "models"
"""Configs of the models the recipes name, by short name (the file stem)."""


@dataclass(frozen=True)
class ModelSpec:
    """A decoder's shape.

    Attributes:
        name: how reports name it.
        hidden: hidden size h.
        layers: decoder layers L.
        heads: attention heads.
        kv_heads: key/value heads (grouped-query attention).
        head_dim: dimension of one head.
        intermediate: SwiGLU width of the dense MLP (unused by MoE layers).
        vocab: vocabulary size V.
        tied_embeddings: the output head shares the embedding matrix.
        experts: routed experts per layer (0 for a dense model).
        experts_per_token: experts each token runs through.
        expert_intermediate: SwiGLU width of one expert.
    """

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool = False
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0

    @property
    def attention_params(self) -> int:
        """q, k, v and o projections of one layer, plus the q/k norms of Qwen3 (``head_dim`` each)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return self.hidden * (q + 2 * kv) + q * self.hidden + 2 * self.head_dim

    @property
    def mlp_params(self) -> int:
        """All MLP weights of one layer (every expert and the router for MoE)."""
        if self.experts:
            return self.experts * 3 * self.hidden * self.expert_intermediate + self.hidden * self.experts
        return 3 * self.hidden * self.intermediate

    @property
    def active_mlp_params(self) -> int:
        """MLP weights one token runs through (its experts and the router for MoE)."""
        if self.experts:
            return self.experts_per_token * 3 * self.hidden * self.expert_intermediate + self.hidden * self.experts
        return self.mlp_params

    @property
    def layer_params(self) -> int:
        """One decoder layer: attention, MLP and its two norms (one FSDP unit in verl's wrapping)."""
        return self.attention_params + self.mlp_params + 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        """Input embedding, output head (unless tied) and the final norm."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2) + self.hidden

    @property
    def params(self) -> int:
        """Total parameters P."""
        return self.layers * self.layer_params + self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters one token runs through (= ``params`` for a dense model)."""
        per_layer = self.attention_params + self.active_mlp_params + 2 * self.hidden
        return self.layers * per_layer + self.embedding_params

    @property
    def active_mlp_width(self) -> int:
        """SwiGLU width one token computes: ``intermediate``, or ``experts_per_token * expert_intermediate``."""
        return self.experts_per_token * self.expert_intermediate if self.experts else self.intermediate

    def kv_bytes_per_token(self, dtype_bytes: int = 2, tensor_parallel: int = 1) -> int:
        """KV-cache bytes one token takes on one GPU: 2 (K and V) x L x kv heads on that GPU x head_dim x dtype.

        With tensor parallelism the kv heads are split over the GPUs, and replicated when there are
        fewer heads than GPUs (each GPU keeps at least one), as vLLM does.
        """
        heads_per_gpu = max(1, -(-self.kv_heads // tensor_parallel))
        return 2 * self.layers * heads_per_gpu * self.head_dim * dtype_bytes


def model_spec(name_or_path: str) -> ModelSpec:
    """A shipped model by short name (``qwen3-30b-a3b``, ``qwen3-32b``, ``smollm2-135m``), a
    ``config.json`` file, or a Hugging Face model folder holding one.

    Raises:
        InputError: for an unknown name, a missing file, or a config without the needed fields.
    """
    path = Path(name_or_path)
    shipped = SHIPPED / f"{name_or_path}.json"
    if shipped.exists():
        path = shipped
    elif path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        names = sorted(p.stem for p in SHIPPED.glob("*.json"))
        raise InputError(f"model {name_or_path!r} is neither one of {names} nor a config.json or a folder with one.")
    name = name_or_path if path == shipped else path.parent.name
    return spec_from_config(json.loads(path.read_text(encoding="utf-8")), name)


def spec_from_config(config: Mapping[str, Any], name: str) -> ModelSpec:
    """A :class:`ModelSpec` from the fields of a Hugging Face ``config.json``.

    Raises:
        InputError: naming the missing field.
    """
    try:
        heads = int(config["num_attention_heads"])
        hidden = int(config["hidden_size"])
        return ModelSpec(
            name=name,
            hidden=hidden,
            layers=int(config["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            intermediate=int(config["intermediate_size"]),
            vocab=int(config["vocab_size"]),
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            experts=int(config.get("num_experts") or 0),
            experts_per_token=int(config.get("num_experts_per_tok") or 0),
            expert_intermediate=int(config.get("moe_intermediate_size") or 0),
        )
    except KeyError as exc:
        raise InputError(f"model config {name!r} has no field {exc}.") from None
