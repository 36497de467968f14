"""``pearl-verl plan``: the capacity plan of a recipe (docs/cluster.md).

    pearl-verl plan                                   # the shipped FSDP2 recipe, 8 x H200
    pearl-verl plan --gpu h100 --set trainer.nnodes=2
    pearl-verl plan --recipe recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_megatron.sh --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from pearl_verl.cluster.plan import GPU_MEMORY_GB, Assumptions
from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.errors import InputError

DEFAULT_RECIPE = Path("recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh")
_ASSUMPTIONS = tuple(f for f in Assumptions.__dataclass_fields__ if f != "gpu_memory_gb")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan",
        help="GPU memory, tokens per step and student/judge serving a recipe needs (no GPU needed)",
        description="Reads a recipe's verl overrides (bash RECIPE --dry-run) and the models' configs, and says "
        "whether the actor update and the vLLM rollout fit the GPUs, how many tokens a step generates, and how "
        "many student and judge replicas keep up. Formulas and defaults: docs/cluster.md.",
    )
    parser.add_argument("--recipe", type=Path, help=f"recipe script (default: {DEFAULT_RECIPE}, in a clone)")
    parser.add_argument("--overrides", type=Path, help="a file of verl overrides, one per line, instead of a recipe")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a recipe setting, e.g. trainer.nnodes=2 (repeatable)")
    parser.add_argument("--gpu", default="h200", help=f"training GPU: {', '.join(GPU_MEMORY_GB)} or its memory in GB")
    parser.add_argument("--tutor-model", default="qwen3-30b-a3b", help="shipped name, config.json or model folder")
    parser.add_argument("--student-model", default="qwen3-30b-a3b", help="as --tutor-model")
    parser.add_argument("--judge-model", default="qwen3-32b", help="as --tutor-model")
    add_config_flags(parser.add_argument_group("assumptions (what a recipe does not say)"), Assumptions, _ASSUMPTIONS)
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(handler=run)


def gpu_memory_gb(text: str) -> float:
    """``h200`` -> 141.0; ``96`` -> 96.0.

    Raises:
        InputError: for an unknown name that is no number either.
    """
    if text.lower() in GPU_MEMORY_GB:
        return GPU_MEMORY_GB[text.lower()]
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--gpu {text!r} is neither one of {list(GPU_MEMORY_GB)} nor a memory size in GB.") from None
    if value <= 0:
        raise InputError(f"--gpu {text!r} must be a positive memory size in GB.")
    return value


def recipe_overrides(recipe: Path | None, overrides: Path | None, extra: list[str]) -> list[str]:
    """The verl overrides to plan for: the recipe's dry run (or the file), then ``extra``.

    Raises:
        InputError: when no recipe is found or its dry run fails.
    """
    if overrides is not None:
        if not overrides.is_file():
            raise InputError(f"--overrides {overrides} is no file.")
        lines = overrides.read_text(encoding="utf-8").split()
    else:
        recipe = recipe or (DEFAULT_RECIPE if DEFAULT_RECIPE.exists() else None)
        if recipe is None:
            if not extra:
                raise InputError(f"no recipe: pass --recipe (e.g. {DEFAULT_RECIPE} in a clone), --overrides or --set.")
            return list(extra)
        if not recipe.is_file():
            raise InputError(f"--recipe {recipe} is no file.")
        proc = subprocess.run(["bash", str(recipe), "--dry-run"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise InputError(f"{recipe} --dry-run failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        lines = proc.stdout.splitlines()
    return [*lines, *extra]


def run(args: argparse.Namespace) -> int:
    from pearl_verl.cluster.model_specs import model_spec
    from pearl_verl.cluster.plan import format_plan, make_plan, settings_from_overrides

    recipe = settings_from_overrides(recipe_overrides(args.recipe, args.overrides, args.set))
    assumptions = Assumptions(gpu_memory_gb=gpu_memory_gb(args.gpu), **config_values(args, _ASSUMPTIONS))
    tutor, student, judge = (model_spec(args.tutor_model), model_spec(args.student_model), model_spec(args.judge_model))
    plan = make_plan(tutor, student, judge, recipe, assumptions)
    print(json.dumps(plan.to_dict(), indent=1) if args.json else format_plan(plan, tutor, student, judge))
    return 0 if plan.fits else 1
