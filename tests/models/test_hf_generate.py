"""The one HF-generate path (verl's ``hf`` rollout and the evaluations' local chat backend): sampling by seed."""

import asyncio

import pytest
import torch
from transformers import AutoModelForCausalLM

from pearl_verl.models.hf_generate import HFGenerator, Sampling, _SeededSampler
from pearl_verl.models.prepare import prepare_model


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(1.0, None, None), (0.5, None, None), (1.0, 2, None),
                                                             (1.0, None, 0.8)])
def test_the_seeded_sampler_draws_from_the_warped_distribution(temperature, top_k, top_p):
    """Over 4,000 seeds each token comes up as often as softmax(logits / T), truncated as top-k/top-p would."""
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0]])
    probs = torch.softmax(logits[0] / temperature, -1)
    if top_k:
        probs[probs.argsort(descending=True)[top_k:]] = 0
    if top_p:
        order = probs.argsort(descending=True)
        keep = torch.cumsum(probs[order], 0) - probs[order] < top_p  # smallest set reaching top_p
        probs[order[~keep]] = 0
    probs = probs / probs.sum()
    counts = torch.zeros(5)
    for seed in range(4000):
        sampler = _SeededSampler([seed], temperature, top_k, top_p)
        counts[int(sampler(torch.zeros((1, 1), dtype=torch.long), logits.clone()).argmax())] += 1
    frequencies = counts / counts.sum()
    assert torch.all(frequencies[probs == 0] == 0)
    assert torch.allclose(frequencies, probs, atol=0.025), (frequencies, probs)


@pytest.fixture(scope="module")
def tiny_moe(tmp_path_factory):
    path = prepare_model("tiny", tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def test_requests_that_sample_differently_are_generated_in_batches_of_their_own(tiny_moe):
    """A batch samples one way: a greedy request sent beside sampled ones stays greedy, and each keeps its tokens."""
    prompt = [5, 6, 7, 8]

    async def mixed(generator):
        return await asyncio.gather(generator.sample(prompt, 8, Sampling(temperature=0.0)),
                                    generator.sample(prompt, 8, Sampling(temperature=1.0), seed=3),
                                    generator.sample(prompt, 8, Sampling(temperature=1.0, top_k=2), seed=3))

    async def alone(generator, sampling, seed=None):
        return await generator.sample(prompt, 8, sampling, seed)

    generator = HFGenerator(tiny_moe, 0, [], cache_bytes=0)
    together = asyncio.run(mixed(generator))
    one_by_one = [asyncio.run(alone(HFGenerator(tiny_moe, 0, [], cache_bytes=0), s, seed)) for s, seed in
                  ((Sampling(temperature=0.0), None), (Sampling(temperature=1.0), 3), (Sampling(temperature=1.0, top_k=2), 3))]
    assert [tokens for tokens, _ in together] == [tokens for tokens, _ in one_by_one]
    assert together[0][0] == asyncio.run(alone(generator, Sampling(temperature=0.0)))[0]  # greedy: the same again
    assert len({tuple(tokens) for tokens, _ in together}) == 3


def test_sampling_reads_vllms_parameters():
    assert Sampling.of({"temperature": 0.7, "top_p": 0.9, "top_k": -1, "max_tokens": 5}) == Sampling(0.7, 0.9, -1)
    assert Sampling.of({"temperature": None}) == Sampling()  # vLLM's defaults: temperature 1, every token
