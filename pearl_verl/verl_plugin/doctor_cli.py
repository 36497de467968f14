"""``pearl-verl doctor [--cluster]``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pearl_verl.llm.cli_flags import add_endpoint_flags, endpoint_values

ENDPOINT_KEYS = {"student": "pearl.student", "judge": "reward.reward_kwargs"}
"""Where a recipe sets each role's endpoint (``+pearl.student.base_url=...``)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "doctor",
        help="check the verl registration and the optional cluster parts; --cluster: everything a GPU run needs",
        description="Without --cluster: is pearl_verl registered with verl, and what can this machine run. With "
        "--cluster, on the GPU node before a run: versions against verl's tested set, GPUs against the capacity "
        "plan, the student and judge endpoints, and the parquet data, one line each; exit 1 on any failure.",
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    cluster = parser.add_argument_group("cluster (--cluster)")
    cluster.add_argument("--cluster", action="store_true", help="run the cluster checks")
    cluster.add_argument("--recipe", type=Path, help="the recipe whose settings are checked (its --dry-run, composed; "
                         "default: the FSDP2 PEARL recipe, in a clone)")
    cluster.add_argument("--data", action="append", default=[], metavar="PARQUET",
                         help="train/val parquet to check (repeatable; default: the recipe's data files)")
    cluster.add_argument("--tutor-model", default="qwen3-30b-a3b", help="for the memory need: as pearl-verl plan")
    for role in ENDPOINT_KEYS:
        add_endpoint_flags(cluster, f"{role}-", role=role, flags=("base-url", "model", "api-key-env"),
                           helps={"base-url": f"{role} endpoint (default: the recipe's)"})
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        from pearl_verl.verl_plugin.cluster_checks import run_cluster_checks

        checks = run_cluster_checks(cluster_target(args))
    else:
        from pearl_verl.verl_plugin.doctor import run_checks

        checks = run_checks()
    from pearl_verl.verl_plugin.doctor import format_report, report_as_dicts

    print(json.dumps(report_as_dicts(checks), indent=2) if args.json else format_report(checks))
    return 1 if any(c.required and not c.ok for c in checks) else 0


def cluster_target(args: argparse.Namespace):
    """The :class:`ClusterTarget` of the recipe's overrides, with the flags taking precedence.

    Raises:
        InputError: for a recipe whose dry run fails or hangs, a setting out of its range (as
            ``pearl-verl plan``), or data files that are neither a path nor a list of paths.
    """
    from pearl_verl.plan.capacity import override_values, training_memory
    from pearl_verl.plan.model_specs import is_file, model_spec
    from pearl_verl.plan.plan_cli import DEFAULT_RECIPE, composed_settings, recipe_overrides
    from pearl_verl.ranges import NULLS
    from pearl_verl.verl_plugin.cluster_checks import ClusterTarget

    recipe = args.recipe or (DEFAULT_RECIPE if is_file(DEFAULT_RECIPE) else None)
    overrides = recipe_overrides(recipe, None, []) if recipe else []
    values = override_values(overrides)
    settings = composed_settings(overrides)
    endpoints = {}
    for role, section in ENDPOINT_KEYS.items():
        flags = {k: v for k, v in endpoint_values(args, f"{role}-").items() if v}
        keys = ("base_url", "model", "api_key_env")
        given = {key: values.get(f"{section}.{key}") for key in keys}
        given = {key: None if value is None or value.strip() in ("", *NULLS) else value for key, value in given.items()}
        endpoints[role] = tuple(flags.get(key) or given[key] for key in keys)
    data = list(args.data)
    for key in ("data.train_files", "data.val_files"):
        if not args.data and key in values:
            data += data_paths(key, values[key])
    needed = training_memory(model_spec(args.tutor_model), settings)["total"] if settings.fsdp else 0.0
    return ClusterTarget(
        engine=settings.engine,
        gpus_per_node=settings.gpus_per_node,
        gpu_bytes_needed=needed if recipe else 0.0,
        endpoints=endpoints,
        judge_samples=settings.judge_samples,
        data_files=data,
    )


def data_paths(key: str, text: str) -> list[str]:
    """The files of a ``data.train_files`` / ``data.val_files`` override: one path, or a list of them
    (a Python literal ``['a.parquet', 'b.parquet']`` or Hydra's unquoted ``[a.parquet,b.parquet]``).

    Raises:
        InputError: ``KEY=VALUE: what is allowed`` for null, an empty value, or a list holding other
            than non-empty strings.
    """
    import ast

    from pearl_verl.ranges import NULLS, bad_value

    allowed = "a parquet path or a list of paths, e.g. ['train.parquet', 'more.parquet']"
    stripped = text.strip()
    if stripped in ("", *NULLS):
        raise bad_value(key, text, allowed)
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        if stripped.startswith("[") and stripped.endswith("]"):  # Hydra's list of unquoted paths
            value = [part.strip().strip("'\"") for part in stripped[1:-1].split(",")]
            if any(set(part) & set("[]{}()") for part in value):
                raise bad_value(key, text, allowed) from None
        elif stripped[0] in "[({":
            raise bad_value(key, text, allowed) from None
        else:  # a plain path: /data/train.parquet
            value = stripped
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(path, str) and path.strip() for path in value):
        raise bad_value(key, text, allowed)
    return [str(path) for path in value]
