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

from pearl_verl.children import child_session
from pearl_verl.config_flags import add_config_flags, config_values, field_docs
from pearl_verl.errors import InputError, located
from pearl_verl.plan.capacity import ASSUMPTION_RANGES, GPU_MEMORY_GB, Assumptions, RecipeSettings
from pearl_verl.plan.model_specs import is_file
from pearl_verl.ranges import shown

DEFAULT_RECIPE = Path("recipes/pearl/run_qwen3_30b_a3b_pearl_gspo_fsdp.sh")
DRY_RUN_TIMEOUT_S = 60.0
"""How long a recipe's ``--dry-run`` (which only prints its command) may take before it is an error."""
_ASSUMPTIONS = tuple(f for f in Assumptions.__dataclass_fields__ if f != "gpu_memory_gb")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "plan",
        help="GPU memory, tokens per step and student/judge serving a recipe needs (no GPU needed)",
        description="Reads the config a recipe runs with (its bash RECIPE --dry-run, composed as verl composes it) "
        "and the models' configs, and says "
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
    docs = field_docs(Assumptions)  # checked after parsing (assumption_values), so each error names FLAG=VALUE
    add_config_flags(parser.add_argument_group("assumptions (what a recipe does not say)"), Assumptions, _ASSUMPTIONS,
                     helps={name: ASSUMPTION_RANGES[name].in_help(docs[name]) for name in _ASSUMPTIONS})
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(handler=run)


def gpu_memory_gb(text: str) -> float:
    """``h200`` -> 141.0; ``96`` -> 96.0.

    Raises:
        InputError: for an unknown name that is no number either, or a size out of range (0, nan, inf).
    """
    if text.lower() in GPU_MEMORY_GB:
        return GPU_MEMORY_GB[text.lower()]
    try:
        float(text)
    except ValueError:
        raise InputError(f"--gpu {shown(text)!r} is neither one of {list(GPU_MEMORY_GB)} nor a memory size in GB.") \
            from None
    return ASSUMPTION_RANGES["gpu_memory_gb"].check("--gpu", text)


def assumption_values(args: argparse.Namespace) -> dict:
    """The assumption flags' values, each checked against :data:`ASSUMPTION_RANGES` (the flag named on error)."""
    return {name: ASSUMPTION_RANGES[name].check(f"--{name.replace('_', '-')}", value)
            for name, value in config_values(args, _ASSUMPTIONS).items()}


def recipe_overrides(recipe: Path | None, overrides: Path | None, extra: list[str],
                     timeout_s: float | None = None) -> list[str]:
    """The verl overrides to plan for: the recipe's dry run (or the file), then ``extra``.

    Args:
        timeout_s: how long the dry run may take (default :data:`DRY_RUN_TIMEOUT_S`).

    Raises:
        InputError: when no recipe is found, the file cannot be read or is not UTF-8 (naming its line),
            an ``extra`` entry is no ``KEY=VALUE``, or the dry run fails or does not finish in time.
    """
    for entry in extra:
        if "=" not in entry:
            raise InputError(f"--set {shown(entry)}: KEY=VALUE, e.g. trainer.nnodes=2")
    if overrides is not None:
        lines = read_overrides_file(overrides).split()
    else:
        recipe = recipe or (DEFAULT_RECIPE if is_file(DEFAULT_RECIPE) else None)
        if recipe is None:
            if not extra:
                raise InputError(f"no recipe: pass --recipe (e.g. {DEFAULT_RECIPE} in a clone), --overrides or --set.")
            return list(extra)
        lines = dry_run(recipe, DRY_RUN_TIMEOUT_S if timeout_s is None else timeout_s).splitlines()
    return [*lines, *extra]


def read_overrides_file(path: Path) -> str:
    """The text of an overrides file.

    Raises:
        InputError: naming the file when it is no file or unreadable, and its line when it is not UTF-8.
    """
    if not is_file(path):
        raise InputError(f"--overrides {path} is no file.")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise located(path, None, f"cannot be read ({exc.strerror or exc}).") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise located(path, raw.count(b"\n", 0, exc.start) + 1, f"is not UTF-8 text (byte {exc.start}).") from None


def dry_run(recipe: Path, timeout_s: float) -> str:
    """What ``bash RECIPE --dry-run`` prints (its verl command, one override a line).

    It runs in a session of its own, so that on timeout everything it started is killed and no
    child left behind holds its output open.

    Raises:
        InputError: when the recipe is no file, fails (its last line of stderr quoted), or takes over ``timeout_s``.
    """
    if not is_file(recipe):
        raise InputError(f"--recipe {recipe} is no file.")
    with child_session(["bash", str(recipe), "--dry-run"], grace_s=2.0, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", errors="replace") as proc:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise InputError(f"recipe {recipe} did not finish its --dry-run within {timeout_s:g} s.") from None
    if proc.returncode != 0:
        last = next((line for line in reversed(err.splitlines()) if line.strip()), "no message")
        raise InputError(f"recipe {recipe} --dry-run failed (exit {proc.returncode}): {' '.join(last.split())[:200]}")
    return out


def composed_settings(lines: list[str]) -> RecipeSettings:
    """The :class:`RecipeSettings` of the config a recipe's command composes to (its ``--config-name``, else
    ``pearl_gspo``, with its ``key=value`` overrides): what it sets, and what verl and the method default to.

    The overrides' own values are checked first, so a bad one is named as the recipe wrote it.

    Raises:
        InputError: ``KEY=VALUE: what is allowed`` for a value out of its range, or the reason the
            overrides do not compose (Hydra's message).
    """
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pearl_verl.plan.capacity import override_values, settings_from_config, settings_from_overrides
    from pearl_verl.verl_plugin.config import PEARL_GSPO, compose_config

    settings_from_overrides(lines)
    names = [line.split("=", 1)[1] for line in lines if line.startswith("--config-name=")]
    # One override a key, the last one given (as the plan reads them), each adding or replacing its key: a plan
    # of `--set +pearl.agent.max_tutor_turns=9` over a recipe that sets the key already is not Hydra's error.
    given = override_values([line for line in lines if not line.startswith("-")])
    overrides = [f"++{key}={value}" for key, value in given.items()]
    try:
        config = compose_config(names[-1] if names else PEARL_GSPO, overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        reason = shown(str(exc).splitlines()[0])
        raise InputError(f"the recipe's overrides do not compose into a verl config: {reason}") from None
    return settings_from_config(config)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.plan.capacity import format_plan, make_plan
    from pearl_verl.plan.model_specs import model_spec

    recipe = composed_settings(recipe_overrides(args.recipe, args.overrides, args.set))
    assumptions = Assumptions(gpu_memory_gb=gpu_memory_gb(args.gpu), **assumption_values(args))
    tutor, student, judge = (model_spec(args.tutor_model), model_spec(args.student_model), model_spec(args.judge_model))
    plan = make_plan(tutor, student, judge, recipe, assumptions)
    print(json.dumps(plan.to_dict(), indent=1) if args.json else format_plan(plan, tutor, student, judge))
    return 0 if plan.fits else 1
