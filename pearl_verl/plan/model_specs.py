"""The sizes the capacity plan needs, from a Hugging Face ``config.json`` (dense or mixture-of-experts).

Counts follow the Qwen3 / Llama decoder: per layer, attention projections q, k, v, o (no biases),
two RMSNorms, and a SwiGLU MLP (gate, up, down) or, for MoE, ``num_experts`` such MLPs of width
``moe_intermediate_size`` with a router, of which ``num_experts_per_tok`` run per token. The
shipped configs (``pearl_verl/resources/models``) give the paper's models: the formulas reproduce
their published sizes (tests/plan/test_model_specs.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError, located
from pearl_verl.ranges import (
    COUNT_OR_NULL,
    LIMIT,
    POSITIVE,
    POSITIVE_OR_NULL,
    Range,
    bad_value,
    shown,
)

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


CONFIG_RANGES: dict[str, Range] = {
    "hidden_size": POSITIVE,
    "num_hidden_layers": POSITIVE,
    "num_attention_heads": POSITIVE,
    "num_key_value_heads": POSITIVE_OR_NULL,
    "head_dim": POSITIVE_OR_NULL,
    "intermediate_size": POSITIVE,
    "vocab_size": POSITIVE,
    "num_experts": COUNT_OR_NULL,
    "num_experts_per_tok": COUNT_OR_NULL,
    "moe_intermediate_size": COUNT_OR_NULL,
}
"""The ``config.json`` fields the plan reads and the values each may take (absent or null: optional
ones default as in :func:`spec_from_config`)."""
REQUIRED_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")


def model_spec(name_or_path: str) -> ModelSpec:
    """A shipped model by short name (``qwen3-30b-a3b``, ``qwen3-32b``, ``smollm2-135m``), a
    ``config.json`` file, or a Hugging Face model folder holding one.

    Raises:
        InputError: for an unknown name, a missing or unreadable file, a file that is not UTF-8 JSON
            (naming its line), or a config whose fields are missing or out of range.
    """
    path = Path(name_or_path)
    shipped = SHIPPED / f"{name_or_path}.json"
    if is_file(shipped):
        path = shipped
    elif _is_dir(path):
        path = path / "config.json"
    if not is_file(path):
        names = sorted(p.stem for p in SHIPPED.glob("*.json"))
        raise InputError(f"model {shown(name_or_path)!r} is neither one of {names} nor a config.json or a folder "
                         "with one.")
    name = name_or_path if path == shipped else path.parent.name
    return spec_from_config(read_json_file(path), name, source=str(path))


def read_json_file(path: Path) -> Any:
    """The JSON value in ``path``.

    Raises:
        InputError: naming the file (and the line) when it cannot be read, is not UTF-8 or is not JSON.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise located(path, None, f"cannot be read ({exc.strerror or exc}).") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise located(path, raw.count(b"\n", 0, exc.start) + 1, f"is not UTF-8 text (byte {exc.start}).") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise located(path, exc.lineno, f"is not valid JSON: {exc.msg} (column {exc.colno}).") from None
    except RecursionError:
        raise located(path, None, "is not valid JSON: nested too deeply.") from None


def spec_from_config(config: Any, name: str, source: str | None = None) -> ModelSpec:
    """A :class:`ModelSpec` from the fields of a Hugging Face ``config.json``, each checked against
    :data:`CONFIG_RANGES` here, where it is read.

    Args:
        config: the parsed ``config.json``.
        name: how reports name the model.
        source: the file it came from, named in errors (default: the model's name).

    Raises:
        InputError: ``SOURCE: FIELD=VALUE: what is allowed`` for a field out of its range, or naming
            the missing field; also for a config that is no JSON object.
    """
    where = source or f"model config {name!r}"
    if not isinstance(config, Mapping):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(config), "null")
        raise InputError(f"{where}: is not a JSON object of model settings (it is a JSON {kind}).")
    missing = [f for f in REQUIRED_FIELDS if f not in config]
    if missing:
        raise InputError(f"{where} has no field {missing[0]!r}.")
    v = {f: allowed.check_json(f"{where}: {f}", config.get(f)) for f, allowed in CONFIG_RANGES.items()}
    heads, hidden = v["num_attention_heads"], v["hidden_size"]
    if v["head_dim"] is None and hidden < heads:
        raise bad_value(f"{where}: hidden_size", config["hidden_size"],
                        f"at least num_attention_heads ({heads}) when head_dim is not given")
    experts = v["num_experts"] or 0
    if experts:
        per_token, width = v["num_experts_per_tok"] or 0, v["moe_intermediate_size"] or 0
        if not 1 <= per_token <= experts:
            raise bad_value(f"{where}: num_experts_per_tok", config.get("num_experts_per_tok"),
                            f"a whole number from 1 to num_experts ({experts})")
        if width < 1:
            raise bad_value(f"{where}: moe_intermediate_size", config.get("moe_intermediate_size"),
                            f"a whole number from 1 to {LIMIT:,} when num_experts is {experts}")
    tied = config.get("tie_word_embeddings", False)
    if tied is not None and not isinstance(tied, bool):
        raise bad_value(f"{where}: tie_word_embeddings", tied, "true, false or null")
    return ModelSpec(
        name=name,
        hidden=hidden,
        layers=v["num_hidden_layers"],
        heads=heads,
        kv_heads=v["num_key_value_heads"] or heads,
        head_dim=v["head_dim"] or hidden // heads,
        intermediate=v["intermediate_size"],
        vocab=v["vocab_size"],
        tied_embeddings=bool(tied),
        experts=experts,
        experts_per_token=v["num_experts_per_tok"] or 0,
        expert_intermediate=v["moe_intermediate_size"] or 0,
    )


def is_file(path: Path) -> bool:
    """``path.is_file()``, False where the name itself is unusable (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
