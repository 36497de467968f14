"""Model sizes from config.json against the published figures."""

import json

import pytest

from pearl_verl.plan.model_specs import ModelSpec, model_spec, spec_from_config


def test_qwen3_30b_a3b_matches_its_published_size_and_kv_cache():
    spec = model_spec("qwen3-30b-a3b")
    # Qwen3 Technical Report, Table 2: 30.5B total, 3.3B activated
    assert spec.params == pytest.approx(30.5e9, rel=0.002) and spec.active_params == pytest.approx(3.3e9, rel=0.02)
    # its bf16 safetensors hold 61,064,216,576 bytes (llm-cal's read of the header)
    assert 2 * spec.params == pytest.approx(61_064_216_576, rel=1e-5)
    # 384 MB of KV cache per 4,096-token request (the same source): 96 KiB per token
    assert spec.kv_bytes_per_token() * 4096 == 384 * 2**20


def test_qwen3_32b_and_smollm2_match_their_published_sizes():
    assert model_spec("qwen3-32b").params == pytest.approx(32.8e9, rel=0.002)  # Qwen3 report, Table 1
    smol = model_spec("smollm2-135m")
    assert smol.params == pytest.approx(135e6, rel=0.01) and smol.active_params == smol.params  # dense, tied head


def test_hand_computed_toy_model():
    toy = ModelSpec("toy", hidden=8, layers=2, heads=2, kv_heads=1, head_dim=4, intermediate=16, vocab=10)
    # attention: q 8x8, k and v 8x4 each, o 8x8, q/k norms 2x4 -> 64+64+64+8 = 200; MLP 3x8x16 = 384; norms 16
    assert (toy.attention_params, toy.mlp_params, toy.layer_params) == (200, 384, 600)
    assert toy.params == 2 * 600 + 2 * 10 * 8 + 8
    assert toy.kv_bytes_per_token() == 2 * 2 * 1 * 4 * 2


def test_moe_counts_every_expert_but_activates_k():
    moe = ModelSpec("moe", hidden=8, layers=1, heads=2, kv_heads=2, head_dim=4, intermediate=99, vocab=10,
                    experts=4, experts_per_token=2, expert_intermediate=6)
    assert moe.mlp_params == 4 * 3 * 8 * 6 + 8 * 4 and moe.active_mlp_params == 2 * 3 * 8 * 6 + 8 * 4
    assert moe.active_mlp_width == 12


def test_kv_heads_split_over_tensor_parallel_and_replicate_beyond():
    spec = model_spec("qwen3-30b-a3b")  # 4 kv heads
    assert spec.kv_bytes_per_token(tensor_parallel=4) == spec.kv_bytes_per_token() // 4
    assert spec.kv_bytes_per_token(tensor_parallel=8) == spec.kv_bytes_per_token(tensor_parallel=4)  # one head each


def test_a_model_folder_and_a_bad_config(tmp_path):
    config = json.loads(model_spec.__globals__["SHIPPED"].joinpath("qwen3-32b.json").read_text())
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    assert model_spec(str(tmp_path / "m")).params == model_spec("qwen3-32b").params
    with pytest.raises(ValueError, match="has no field 'vocab_size'"):
        spec_from_config({k: v for k, v in config.items() if k != "vocab_size"}, "x")
    with pytest.raises(ValueError, match="is neither one of"):
        model_spec("gpt-9")
