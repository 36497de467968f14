"""The tiny model's head size changes how its attention is split, not its size: its default, heads of 32 (which
vLLM's CPU attention needs, so one model serves both rollouts), and the heads of 16 it had before compare at equal
cost (the same projections; Qwen3's per-head q and k norms differ by 16 weights each)."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from pearl_verl.models.tiny import build_tiny_model


@pytest.mark.parametrize("moe", [True, False])
def test_heads_of_32_have_the_weights_of_heads_of_16(tmp_path, moe):
    built = {head: build_tiny_model(tmp_path / str(head), moe=moe, head_dim=head) for head in (16, 32)}
    configs = {head: json.loads((path / "config.json").read_text()) for head, path in built.items()}
    heads = {h: (c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]) for h, c in configs.items()}
    assert heads == {16: (4, 2, 16), 32: (2, 1, 32)}
    default = json.loads((build_tiny_model(tmp_path / "default", moe=moe) / "config.json").read_text())
    assert (default["num_attention_heads"], default["num_key_value_heads"], default["head_dim"]) == (2, 1, 32)
    shapes = {head: {name: tuple(p.shape) for name, p in AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32).named_parameters()} for head, path in built.items()}
    # every weight the same, the attention projections included; only Qwen3's q and k norms are one head wide
    norms = {name for name in shapes[16] if name.endswith(("q_norm.weight", "k_norm.weight"))}
    assert norms and {n: shapes[16][n] for n in norms} == {n: (16,) for n in norms}
    assert {n: (32,) for n in norms} == {n: shapes[32][n] for n in norms}
    assert {n: s for n, s in shapes[16].items() if n not in norms} == {n: s for n, s in shapes[32].items() if n not in norms}
    with pytest.raises(ValueError, match="does not divide"):
        build_tiny_model(tmp_path / "odd", moe=moe, head_dim=48)
