"""``pearl-verl train-local``."""

from __future__ import annotations

import argparse
import dataclasses

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.local.config import LocalTrainConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "train-local",
        help="PEARL training on this machine (CPU or one GPU) with verl's FSDP2 engine and GSPO",
        description="Runs the pearl_tutor agent loop, the judge, the PEARL estimator and verl's GSPO update "
        "in one process. Defaults fit a 2-core CPU: tiny random Qwen3-MoE, offline student and judge.",
    )
    add_config_flags(parser, LocalTrainConfig)
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out-dir")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pearl_verl.local.quiet import quiet_run
    from pearl_verl.local.train import run_training

    config = LocalTrainConfig(**config_values(args, (f.name for f in dataclasses.fields(LocalTrainConfig))))
    out = Path(config.out_dir)
    with quiet_run(out / "train.log", verbose=args.verbose) as console:
        rows = run_training(config, resume=args.resume, progress_file=console.err)
    summary = out / "summary.txt"
    if summary.exists():
        print(summary.read_text(encoding="utf-8").rstrip())
    else:
        evals = [row for row in rows if "eval/reward/mean" in row]
        if len(evals) >= 2:
            print(f"held-out judge reward {evals[0]['eval/reward/mean']:.3f} (step {evals[0]['step']}) -> "
                  f"{evals[-1]['eval/reward/mean']:.3f} (step {evals[-1]['step']})")
    print(f"done: step {rows[-1]['step']} of {config.steps}; outputs in {config.out_dir} (summary.txt, dialogues.md, "
          f"curves.png, metrics.jsonl, heldout.jsonl, dialogues/, checkpoints/; library output in train.log, or on "
          f"screen with -v); read the dialogues with: pearl-verl view {config.out_dir} -o view.html")
    return 0
