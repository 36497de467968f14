"""A local Hugging Face tutor and reward model on the GPU, against the same machine's CPU, in one run.

    python bench/local_models_on_gpu.py [--out DIR] [--calls 8] [--tokens 64]

What ``eval-tutor --tutor name=x,hf=DIR`` (``HFChatBackend``) and ``eval-rm``/``eval-mtb`` (``HFRewardModel``) run
when a user evaluates a local model: both now pick the GPU when torch sees one. Builds a random dense Qwen3 of
about 0.2B parameters with the offline tokenizer (nothing from a hub), times ``--calls`` chat calls of
``--tokens`` sampled tokens and 32 reward-model scorings on ``cuda`` and on ``cpu``, then runs the
``eval-tutor`` command end to end on the default device (offline judge, 4 problems) and checks its rows.
Prints one JSON object (also ``DIR/local_models_on_gpu.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GSM8K = ROOT / "pearl_verl" / "resources" / "data" / "gsm8k" / "test_first50.jsonl"
MESSAGES = [{"role": "system", "content": "You are a Socratic math tutor."},
            {"role": "user", "content": "Tom has 3 boxes of 4 apples and eats 2. How many are left? I think 14."}]


def build(out: Path) -> tuple[Path, Path]:
    """A ~0.2B random Qwen3 causal LM and a one-label sequence classifier of the same shape."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3ForSequenceClassification

    from pearl_verl.models.tiny import build_offline_tokenizer, tiny_qwen3_config

    paths = []
    for name, head in (("tutor", AutoModelForCausalLM.from_config), ("rm", Qwen3ForSequenceClassification)):
        folder = out / name
        tokenizer = build_offline_tokenizer(folder)
        config = tiny_qwen3_config(len(tokenizer), tokenizer, layers=16, head_dim=64)
        config.update({"hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
                       "num_key_value_heads": 8, "num_labels": 1})
        torch.manual_seed(0)
        model = head(config) if name == "rm" else head(config, dtype=torch.float32)
        model.save_pretrained(folder)
        paths.append(folder)
    return paths[0], paths[1]


def time_chat(path: Path, device: str, calls: int, tokens: int) -> dict:
    from pearl_verl.eval.hf_backend import HFChatBackend
    from pearl_verl.llm.chat_types import SamplingConfig

    backend = HFChatBackend(path, SamplingConfig(temperature=1.0, top_k=50, max_tokens=tokens), seed=0, device=device)
    asyncio.run(backend.chat(MESSAGES))  # warm-up: kernels, allocator
    start = time.perf_counter()
    results = [asyncio.run(backend.chat(MESSAGES)) for _ in range(calls)]
    elapsed = time.perf_counter() - start
    generated = sum(r.completion_tokens for r in results)
    return {"device": backend.device, "s_per_call": elapsed / calls, "tokens_per_s": generated / elapsed}


def time_rm(path: Path, device: str) -> dict:
    from pearl_verl.eval.hf_backend import HFRewardModel

    rm = HFRewardModel(path, device=device)
    asyncio.run(rm.score(MESSAGES))
    start = time.perf_counter()
    scores = [asyncio.run(rm.score(MESSAGES)) for _ in range(32)]
    return {"device": rm.device, "s_per_score": (time.perf_counter() - start) / 32, "same_score": len(set(scores)) == 1}


def eval_tutor(path: Path, out: Path) -> dict:
    """The eval-tutor command with the local tutor on the default device; its rows read back."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pearl_verl.cli", "eval-tutor", str(GSM8K), "--limit", "4",
                           "--tutor", f"name=local,hf={path}", "--judge", "offline", "--max-turns", "4",
                           "--max-tokens", "32", "--out", str(out)], capture_output=True, text=True, check=False)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()] if proc.returncode == 0 else []
    return {"returncode": proc.returncode, "s": time.perf_counter() - start, "dialogues": len(rows),
            "judged": sum(1 for r in rows if (r.get("judge") or {}).get("judge_ok")),
            "tutor_turns": sum(t["role"] == "tutor" for r in rows if r["episode"] for t in r["episode"]["turns"]),
            "stderr_tail": proc.stderr[-1500:] if proc.returncode else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp")) / "local_models_on_gpu")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()

    import torch
    import transformers

    from pearl_verl.eval.hf_backend import default_device

    args.out.mkdir(parents=True, exist_ok=True)
    tutor, rm = build(args.out / "models")
    report: dict = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                    "default_device": default_device()}
    devices = ["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"]
    report["chat"] = {d: time_chat(tutor, d, args.calls, args.tokens) for d in devices}
    report["reward_model"] = {d: time_rm(rm, d) for d in devices}
    if "cuda" in devices:
        report["chat_speedup"] = report["chat"]["cpu"]["s_per_call"] / report["chat"]["cuda"]["s_per_call"]
        report["rm_speedup"] = report["reward_model"]["cpu"]["s_per_score"] / report["reward_model"]["cuda"]["s_per_score"]
    report["eval_tutor"] = eval_tutor(tutor, args.out / "eval")
    text = json.dumps(report, indent=1)
    (args.out / "local_models_on_gpu.json").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
