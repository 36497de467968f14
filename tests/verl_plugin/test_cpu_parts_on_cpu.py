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
    assert _probe(VERL_PLATFORM="cpu") == {"device": "cpu", "engine": "FSDPEngineWithLMHead", "gloo": True,
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


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_generated_tokens_carry_the_log_probs_verls_actor_computes(tiny_moe, temperature):
    """log_softmax(logits / T) of each sampled token under the model, as the actor's old log-prob."""
    import asyncio

    torch.manual_seed(0)
    server = HFGenerateServer(tiny_moe, pad_token_id=0, stop_token_ids=[], max_batch=4)
    prompts = [[5, 6, 7, 8], [9, 10]]

    async def both():
        params = {"temperature": temperature, "top_p": 1.0, "top_k": -1, "max_tokens": 6}
        return await asyncio.gather(*(server.generate(f"r{i}", prompt_ids=p, sampling_params=params)
                                      for i, p in enumerate(prompts)))

    for prompt, output in zip(prompts, asyncio.run(both())):
        assert len(output.token_ids) == len(output.log_probs) == 6
        ids = torch.tensor([prompt + output.token_ids])
        with torch.no_grad():
            logits = tiny_moe(ids).logits[0, len(prompt) - 1 : -1] / temperature
        expected = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(output.token_ids)[:, None])[:, 0]
        assert torch.allclose(torch.tensor(output.log_probs), expected, atol=1e-4)


def _rollout_config(model: Path, **rollout):
    from omegaconf import OmegaConf

    settings = {"name": "vllm", "enable_sleep_mode": False, "free_cache_engine": False, "enforce_eager": True, **rollout}
    return OmegaConf.create({"actor_rollout_ref": {"rollout": settings, "model": {"path": str(model)}}})


def test_the_vllm_rollout_on_the_cpu_is_checked_before_ray_starts(tmp_path, monkeypatch):
    from pearl_verl.errors import InputError
    from pearl_verl.verl_plugin.cpu.parts import check_cpu_rollout, model_head_dim

    small, large = prepare_model("tiny", tmp_path / "small"), prepare_model("tiny", tmp_path / "large", head_dim=32)
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
