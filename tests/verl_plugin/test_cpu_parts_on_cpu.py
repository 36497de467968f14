"""The CPU parts verl's trainer runs on: registered in every process, selected only when asked for."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM
from verl.workers.engine.fsdp.utils import unfuse_moe_params

from pearl_verl.models.prepare import prepare_model
from pearl_verl.verl_plugin.cpu.hf_rollout import pack_experts
from pearl_verl.verl_plugin.cpu.hf_server import HFGenerateServer
from pearl_verl.verl_plugin.doctor import _CPU_PROBE


def _probe(**env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if k != "VERL_PLATFORM"}
    proc = subprocess.run([sys.executable, "-c", _CPU_PROBE], capture_output=True, text=True, check=True,
                          env={**base, **env})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_without_verl_platform_cpu_nothing_is_selected_or_patched():
    found = _probe()
    assert found["device"] == "cuda"  # verl's own fallback on a machine without GPUs: never our CPU platform
    assert found["engine"] is None and found["gloo"] is False
    assert (found["replica"], found["adapter"]) == ("HFRolloutReplica", "HFServerAdapter")  # named, so selectable


def test_verl_platform_cpu_sets_up_the_whole_cpu_process():
    assert _probe(VERL_PLATFORM="cpu") == {"device": "cpu", "engine": "HostFSDPEngine", "gloo": True,
                                           "replica": "HFRolloutReplica", "adapter": "HFServerAdapter"}


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    path = prepare_model("tiny", tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def test_experts_split_by_verls_weight_sync_are_packed_back_exactly(tiny_moe):
    state = tiny_moe.state_dict()
    split = dict(unfuse_moe_params(state.items(), tiny_moe.config.model_type))
    assert any(".mlp.experts.0.gate_proj.weight" in name for name in split)  # verl really split them
    packed = pack_experts(split)
    assert sorted(packed) == sorted(state)
    assert all(torch.equal(packed[name], state[name]) for name in state)
    with pytest.raises(ValueError, match="experts of down_proj"):
        pack_experts({k: v for k, v in split.items() if not k.endswith("experts.1.down_proj.weight")})


def _sampled_log_probs(model, prompt: list[int], tokens: list[int], temperature: float) -> torch.Tensor:
    """log_softmax(logits / T) of each sampled token under the model, the whole sequence encoded at once."""
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1] / temperature
    return torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(tokens)[:, None])[:, 0]


def _generate_all(server, prompts: dict[str, list[int]], temperature: float = 1.0, max_tokens: int = 6) -> dict:
    """Each prompt's output, generated together; every call has a new request id, as verl's server manager sends."""
    import asyncio
    from uuid import uuid4

    async def together():
        params = {"temperature": temperature, "top_p": 1.0, "top_k": -1, "max_tokens": max_tokens}
        return await asyncio.gather(*(server.generate(uuid4().hex, prompt_ids=p, sampling_params=params)
                                      for p in prompts.values()))

    return dict(zip(prompts, asyncio.run(together())))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_generated_tokens_carry_the_log_probs_verls_actor_computes(tiny_moe, temperature):
    """log_softmax(logits / T) of each sampled token under the model, as the actor's old log-prob."""
    torch.manual_seed(0)
    server = HFGenerateServer(tiny_moe, pad_token_id=0, stop_token_ids=[], max_batch=4)
    prompts = {"r0": [5, 6, 7, 8], "r1": [9, 10]}
    for key, output in _generate_all(server, prompts, temperature).items():
        assert len(output.token_ids) == len(output.log_probs) == 6
        expected = _sampled_log_probs(tiny_moe, prompts[key], output.token_ids, temperature)
        assert torch.allclose(torch.tensor(output.log_probs), expected, atol=1e-4)


def _generate_seeded(server, requests: dict[str, tuple[list[int], int]], **params) -> dict[str, list[int]]:
    """Each request's tokens, all requests sent together, each with its own seed."""
    import asyncio

    async def together():
        base = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_tokens": 8, **params}
        return await asyncio.gather(*(server.generate(key, prompt_ids=prompt, sampling_params={**base, "seed": seed})
                                      for key, (prompt, seed) in requests.items()))

    return {key: out.token_ids for key, out in zip(requests, asyncio.run(together()))}


def test_a_seeded_request_samples_the_same_tokens_whatever_batch_it_lands_in(tiny_moe):
    """Batches form by timing: a request's tokens depend on its seed, not on its batch-mates or the global generator."""
    request = {"r": ([5, 6, 7, 8], 11)}
    alone = _generate_seeded(HFGenerateServer(tiny_moe, 0, [], cache_bytes=0), request)["r"]
    torch.manual_seed(123)  # the global generator plays no part
    mates = {"m1": ([9, 10], 1), **request, "m2": (list(range(30, 50)), 2)}
    batched = _generate_seeded(HFGenerateServer(tiny_moe, 0, [], cache_bytes=0), mates)
    assert batched["r"] == alone
    other_seed = _generate_seeded(HFGenerateServer(tiny_moe, 0, [], cache_bytes=0), {"r": ([5, 6, 7, 8], 12)})["r"]
    assert other_seed != alone
    top2 = _generate_seeded(HFGenerateServer(tiny_moe, 0, [], cache_bytes=0), mates, top_k=2, temperature=0.7)
    assert top2["r"] != alone and top2 == _generate_seeded(HFGenerateServer(tiny_moe, 0, [], cache_bytes=0), mates,
                                                           top_k=2, temperature=0.7)


def test_a_dialogue_kept_between_turns_generates_as_if_encoded_whole(tiny_moe):
    """Each dialogue's keys and values are found again at its next turn; what is sampled scores as a fresh encoding.

    The batches mix dialogues with kept prefixes of different lengths, two that share their first prompt (one
    problem's group), one whose earlier tokens changed, and one that is new; a weight update drops what the old
    weights computed.
    """
    from pearl_verl.models.prefix_cache import BLOCK

    torch.manual_seed(0)
    server = HFGenerateServer(tiny_moe, pad_token_id=0, stop_token_ids=[], max_batch=8)
    first = list(range(5, 5 + 2 * BLOCK))
    prompts = {"a": first, "a2": list(first), "b": list(range(100, 100 + BLOCK + 3)), "c": list(range(200, 240))}
    reused, lengths = [], []
    for turn in range(4):
        outputs = _generate_all(server, prompts)
        for key, output in outputs.items():
            expected = _sampled_log_probs(tiny_moe, prompts[key], output.token_ids, 1.0)
            assert torch.allclose(torch.tensor(output.log_probs), expected, atol=1e-4), (turn, key)
        reused.append(server.prefix_cache.reused_tokens)
        lengths.append({key: len(p) for key, p in prompts.items()})
        # the student answers: the next prompt is this one, the tutor's reply and a few new tokens
        prompts = {key: prompts[key] + out.token_ids + [300 + turn] * (i + 1)
                   for i, (key, out) in enumerate(outputs.items())}
        if turn == 1:
            prompts["c"][3] = 99  # an early token changed: nothing before the first whole block is reused
        if turn == 2:
            prompts["d"] = list(range(400, 430))
    # A turn keeps its prompt and 5 of its 6 tokens (the last one sampled was never encoded); the next turn finds
    # them by content: "a" and "a2" each their own, not the other's, which shares only the first prompt.
    assert reused[0] == 0
    assert reused[1] == sum(length + 5 for length in lengths[0].values())
    assert reused[2] - reused[1] == sum(length + 5 for key, length in lengths[1].items() if key != "c")
    # one kept sequence a dialogue (each turn's replaced the one it extends), and "c"'s from before its change
    assert len(server.prefix_cache) == 5 + 1
    state = {name: tensor + 0.01 for name, tensor in tiny_moe.state_dict().items()}
    server.load_weights(state)
    assert len(server.prefix_cache) == 0 and server.prefix_cache.nbytes == 0
    tiny_moe.load_state_dict(state)
    outputs = _generate_all(server, prompts)
    assert server.prefix_cache.reused_tokens == reused[-1]  # nothing computed by the old weights was used
    for key, output in outputs.items():
        expected = _sampled_log_probs(tiny_moe, prompts[key], output.token_ids, 1.0)
        assert torch.allclose(torch.tensor(output.log_probs), expected, atol=1e-4), key


def test_the_kept_sequences_stay_within_their_memory_least_recently_used_first():
    from pearl_verl.models.prefix_cache import BLOCK, PrefixCache

    def layers(tokens: int):  # two layers, keys and values of 2 heads x 4 dims: 128 bytes a token
        return [(torch.ones(2, tokens, 4), torch.ones(2, tokens, 4)) for _ in range(2)]

    size = 2 * BLOCK
    sequences = {name: [start] * size for name, start in zip("abcde", range(1, 6))}
    cache = PrefixCache(max_bytes=3 * size * 128)  # room for three
    for name in "abc":
        cache.store(sequences[name], layers(size))
    assert cache.lookup(sequences["a"] + [9]).length == size  # "a" is now the most recently used
    cache.store(sequences["d"], layers(size))
    assert (len(cache), cache.nbytes) == (3, 3 * size * 128)
    assert cache.lookup(sequences["b"] + [9]).length == 0  # the least recently used went first
    hit = cache.lookup(sequences["a"][: BLOCK + 3] + [7])
    assert hit.length == BLOCK + 3 and not hit.covers_source
    assert all(k.shape == (2, BLOCK + 3, 4) and v.shape == (2, BLOCK + 3, 4) for k, v in hit.layers)
    assert cache.lookup(sequences["c"]).length == size - 1  # the last prompt token is always encoded again
    assert cache.lookup(sequences["a"][: BLOCK - 1] + [7] * 20).length == 0  # less than a whole block is not found
    cache.store([5] * 8 * size, layers(8 * size))  # larger than the whole budget: not kept, nothing evicted
    assert len(cache) == 3 and cache.lookup([5] * 8 * size + [9]).length == 0
    hit = cache.lookup(sequences["d"] + [9])
    assert hit.covers_source
    cache.store(sequences["d"] + [9, 9], layers(size + 2), replaces=hit.source)  # the longer one replaces it
    assert cache.lookup(sequences["d"] + [9, 9, 9]).length == size + 2
    assert len(cache) == 2  # and, 2 tokens larger than what it replaced, pushed out the least recently used


def _rollout_config(model: Path, **rollout):
    from omegaconf import OmegaConf

    settings = {"name": "vllm", "enable_sleep_mode": False, "free_cache_engine": False, "enforce_eager": True,
                "enable_chunked_prefill": False, **rollout}
    return OmegaConf.create({"actor_rollout_ref": {"rollout": settings, "model": {"path": str(model)}}})


def test_the_vllm_rollout_on_the_cpu_is_checked_before_ray_starts(tmp_path, monkeypatch):
    from pearl_verl.errors import InputError
    from pearl_verl.verl_plugin.cpu.parts import check_cpu_rollout, model_head_dim

    small, large = prepare_model("tiny", tmp_path / "small", head_dim=16), prepare_model("tiny", tmp_path / "large")
    assert (model_head_dim(small), model_head_dim(large), model_head_dim(tmp_path / "nowhere")) == (16, 32, None)
    check_cpu_rollout(_rollout_config(small))  # not a CPU process: verl's own checks apply
    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    check_cpu_rollout(_rollout_config(large))
    check_cpu_rollout(_rollout_config(small, name="hf"))  # the hf rollout takes any head size
    with pytest.raises(InputError, match="attention heads of 16; vLLM's CPU attention takes 32 and more"):
        check_cpu_rollout(_rollout_config(small))
    with pytest.raises(InputError, match=r"needs \+actor_rollout_ref.rollout.enable_sleep_mode=False "
                                         r"actor_rollout_ref.rollout.enforce_eager=True \(.*\+parts=vllm_cpu sets them all"):
        check_cpu_rollout(_rollout_config(large, enable_sleep_mode=True, enforce_eager=False))
