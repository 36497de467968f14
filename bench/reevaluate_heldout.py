"""Evaluate a finished train-local run's first and last policy again, on another held-out set.

    python bench/reevaluate_heldout.py RUN_DIR [--eval-problems 32] [--eval-seeds 3]

The policies are the run's own (where RL started: the cold start's export or the initial model; the
last checkpoint's Hugging Face export), so the gain measured on a larger held-out set belongs to the
same training run, not to a new one. The held-out problems are the ``--eval-problems`` problems after
the run's training problems, drawn as the run drew its own (same seed, same order): the run's 16 are
the first 16 of 32. Prints the summary train-local prints and writes it to
``RUN_DIR/summary_<N>problems.txt``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--eval-problems", type=int, default=32)
    parser.add_argument("--eval-seeds", type=int)
    args = parser.parse_args()

    from pearl_verl.train_local.config import LocalTrainConfig
    from pearl_verl.train_local.heldout import summary
    from pearl_verl.train_local.quiet import quiet_run
    from pearl_verl.train_local.train import LocalRun, checkpoint_steps
    from pearl_verl.train_local.verl_run import hf_export

    saved = json.loads((args.run / "config.json").read_text())
    changes = {"eval_problems": args.eval_problems, "out_dir": str(args.run)}
    if args.eval_seeds:
        changes["eval_seeds"] = args.eval_seeds
    config = dataclasses.replace(LocalTrainConfig(**saved["config"]), **changes)
    with quiet_run(args.run / "reevaluate.log", verbose=False):
        run = LocalRun(config, saved["overrides"])
        evaluator = run.evaluator()
        last = checkpoint_steps(run.out)[-1]
        before = evaluator.evaluate(run.policy_dir, 0)
        after = evaluator.evaluate(hf_export(run.out, last), last)
    text = summary(before, after)
    (args.run / f"summary_{args.eval_problems}problems.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
