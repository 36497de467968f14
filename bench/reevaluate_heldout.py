"""Evaluate a finished train-local run's first and last policy again, on another held-out set.

    python bench/reevaluate_heldout.py RUN_DIR [--eval-problems 32] [--eval-seeds 3]

The policies are the run's own (where RL started: the cold start's checkpoint or the initial model; the
last checkpoint), so the gain measured on a larger held-out set belongs to the same training run, not
to a new one. The held-out problems are the ``--eval-problems`` problems after the run's training
problems, drawn as the run drew its own (same seed, same order): the run's 16 are the first 16 of 32.
Each policy is evaluated as the run evaluated it, by verl's validation (``trainer.val_only``) on the
run's rollout engine and judge. Prints the summary train-local prints and writes it to
``RUN_DIR/summary_<N>problems.txt``; the judged dialogues go to ``RUN_DIR/reevaluate_<N>/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

REPLACED = ("data.val_files=", "trainer.validation_data_dir=", "trainer.val_before_train=", "trainer.resume_mode=",
            "trainer.resume_from_path=")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--eval-problems", type=int, default=32)
    parser.add_argument("--eval-seeds", type=int)
    args = parser.parse_args()

    from pearl_verl.data.prepare import verl_row, write_rows
    from pearl_verl.train_local.heldout import HeldOut, summary
    from pearl_verl.train_local.local_config import LocalTrainConfig
    from pearl_verl.train_local.quiet import quiet_run
    from pearl_verl.train_local.train import LocalRun
    from pearl_verl.train_local.verl_run import latest_checkpoint, run_main_ppo

    saved = json.loads((args.run / "config.json").read_text())
    changes = {"eval_problems": args.eval_problems, "out_dir": str(args.run)}
    if args.eval_seeds:
        changes["eval_seeds"] = args.eval_seeds
    config = dataclasses.replace(LocalTrainConfig(**saved["config"]), **changes)
    folder = (args.run / f"reevaluate_{args.eval_problems}").resolve()
    evaluations = []
    with quiet_run(args.run / "reevaluate.log", verbose=False):
        run = LocalRun(config, saved["overrides"])
        val = write_rows([verl_row(s, "val", i) for i, s in enumerate(run.eval_samples)], folder / "val.parquet")
        last = latest_checkpoint(run.out)
        for step in (0, last):
            checkpoint = run.out / "checkpoints" / f"global_step_{step}"
            start = (["trainer.resume_mode=resume_path", f"trainer.resume_from_path={checkpoint}"]
                     if checkpoint.is_dir() else ["trainer.resume_mode=disable"])
            overrides = [o for o in run.overrides() if not o.startswith(REPLACED)]
            overrides += [f"data.val_files=['{val}']", f"trainer.validation_data_dir={folder}",
                          "trainer.val_before_train=True", "trainer.val_only=True", *start]
            with open(folder / "train.log", "a", encoding="utf-8") as log:
                run_main_ppo(overrides, out=folder, log=log, on_step=lambda row: None, resume_hint="")
            evaluations.append(HeldOut.from_validation(folder / f"{step}.pearl.jsonl", config.eval_seeds,
                                                       config.group_size))
    text = summary(*evaluations)
    (args.run / f"summary_{args.eval_problems}problems.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
