"""``pearl-verl train-local``."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.out_paths import output_dir_text, retype
from pearl_verl.student.fallbacks import add_fallback_flag
from pearl_verl.train_local.local_config import LocalTrainConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "train-local",
        help="PEARL training on this machine's CPU through verl's own trainer (main_ppo, GSPO, FSDP2)",
        description="Cold start, then PEARL RL through verl's main_ppo on the CPU parts (Ray, the pearl_tutor agent "
        "loop on pearl_verl's HF-generate rollout or verl's own vLLM rollout (--rollout), the pearl_judge reward "
        "loop, the pearl estimator, GSPO), with held-out "
        "evaluations before and after. Defaults fit a 2-core CPU: tiny random Qwen3-MoE, offline student, the fitted CPU judge.",
    )
    add_config_flags(parser, LocalTrainConfig)
    retype(parser, "--out-dir", output_dir_text)
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out-dir")
    add_fallback_flag(parser, role="served student")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="Hydra overrides for verl's main_ppo, after the run's own (e.g. trainer.save_freq=5)")
    parser.set_defaults(handler=run, stop_hint="; the same command with --resume goes on from its last checkpoint")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from pearl_verl.children import Stopped
    from pearl_verl.train_local.quiet import quiet_run
    from pearl_verl.train_local.resume_point import resume_point
    from pearl_verl.train_local.role_rates import role_rates, role_verdict
    from pearl_verl.train_local.train import finished_cold_start, run_training
    from pearl_verl.train_local.verl_run import latest_checkpoint

    config = LocalTrainConfig(**config_values(args, (f.name for f in dataclasses.fields(LocalTrainConfig))))
    out = Path(config.out_dir)
    def from_cold_start() -> bool:  # what run_training resumes from without an RL checkpoint
        return bool(config.cold_start_steps and finished_cold_start(out))

    def start_again() -> str:
        return "RL starts again from the cold start's" if from_cold_start() else "the run starts from the beginning"

    if args.resume and not latest_checkpoint(out):  # a run killed before its first RL checkpoint
        print(f"--resume: {out / 'checkpoints'} holds no RL checkpoint to resume from; {start_again()}", file=sys.stderr)
    elif args.resume and (going_back := resume_point(out).message(start_again())):
        print(going_back, file=sys.stderr)
    try:
        with quiet_run(out / "train.log", verbose=args.verbose) as console:
            rows = run_training(config, resume=args.resume, progress_file=console.err, extra_overrides=args.overrides)
    except Stopped:
        if not latest_checkpoint(out) and not from_cold_start():  # the hint would promise a checkpoint
            args.stop_hint = "; nothing was checkpointed yet: the same command starts it again"
        raise
    summary = out / "summary.txt"
    if summary.exists():
        print(summary.read_text(encoding="utf-8").rstrip())
    last = max((row["step"] for row in rows), default=0)
    print(f"done: step {last} of {config.steps}; outputs in {config.out_dir} (summary.txt, dialogues.md, "
          f"curves.png, metrics.jsonl, heldout.jsonl, dialogues/, checkpoints/; verl's and the libraries' output in "
          f"train.log); read the dialogues with: pearl-verl view {config.out_dir} -o view.html")
    settings = json.loads((out / "config.json").read_text(encoding="utf-8"))
    verdict = role_verdict(role_rates(rows, settings.get("served_roles", ())), args.max_fallback_rate,
                           settings.get("student_structured_output"))
    if verdict is not None:
        print(verdict, file=sys.stderr)
        return 1
    return 0
