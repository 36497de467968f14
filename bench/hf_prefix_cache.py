"""The ``hf`` rollout server with and without each episode's keys and values kept between its turns.

    python bench/hf_prefix_cache.py [--episodes 16 192] [--turns 12] [--json out.json]

Drives :class:`pearl_verl.verl_plugin.cpu.hf_server.HFGenerateServer` on the main job's tiny Qwen3-MoE
(``prepare_model("tiny")``) with dialogues shaped like the main job's: a first prompt of 200-400 tokens
(system prompt, problem, the student's opening), then per turn 24 sampled tutor tokens and a student answer
of 20-60 tokens. 16 episodes is a training step's rollout (4 problems x 4), 192 a held-out validation
(16 problems x 12). Each setting runs the same episodes from the same seed, one after the other in this
process; prints a Markdown table for BENCHMARKS.md. Nothing here gates: it is a measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import torch


def run(model: torch.nn.Module, episodes: int, turns: int, cache_bytes: int) -> dict:
    from pearl_verl.verl_plugin.cpu.hf_server import HFGenerateServer

    torch.manual_seed(0)
    rng = random.Random(0)
    server = HFGenerateServer(model, pad_token_id=0, stop_token_ids=[], max_batch=256, cache_bytes=cache_bytes)
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_tokens": 24}
    prompt_tokens = 0

    async def episode(index: int) -> None:
        nonlocal prompt_tokens
        prompt = [rng.randrange(5, 800) for _ in range(rng.randrange(200, 400))]
        for _ in range(turns):
            # a new request id a turn, as verl's server manager sends
            output = await server.generate(uuid.uuid4().hex, prompt_ids=prompt, sampling_params=params)
            prompt_tokens += len(prompt)
            prompt = prompt + list(output.token_ids) + [rng.randrange(5, 800) for _ in range(rng.randrange(20, 60))]

    async def together() -> None:
        await asyncio.gather(*(episode(i) for i in range(episodes)))

    start = time.perf_counter()
    asyncio.run(together())
    reused = server.prefix_cache.reused_tokens if server.prefix_cache else 0
    return {"episodes": episodes, "kept": cache_bytes > 0, "wall_s": time.perf_counter() - start,
            "prompt_tokens": prompt_tokens, "reused_tokens": reused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[16, 192])
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from transformers import AutoModelForCausalLM

    from pearl_verl.models.prefix_cache import DEFAULT_MAX_BYTES
    from pearl_verl.models.prepare import prepare_model

    with tempfile.TemporaryDirectory() as tmp:
        model = AutoModelForCausalLM.from_pretrained(prepare_model("tiny", Path(tmp)), dtype=torch.float32).eval()
    rows = [run(model, n, args.turns, cache) for n in args.episodes for cache in (0, DEFAULT_MAX_BYTES)]
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| episodes x turns | every prompt encoded whole (s) | kept between turns (s) | speed-up "
          "| prompt tokens reused |")
    print("|---:|---:|---:|---:|---:|")
    for whole, kept in zip(rows[::2], rows[1::2]):
        print(f"| {whole['episodes']} x {args.turns} | {whole['wall_s']:.1f} | {kept['wall_s']:.1f} | "
              f"{whole['wall_s'] / kept['wall_s']:.2f}x | {kept['reused_tokens'] / kept['prompt_tokens']:.0%} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
