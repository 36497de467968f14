"""``pearl-verl <command>``: the package's command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from pearl_verl import __version__
from pearl_verl.advantage import AGGREGATIONS, AdvantageConfig


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pearl-verl", description="PEARL Socratic-tutor RL as a verl plugin.")
    parser.add_argument("--version", action="version", version=f"pearl_verl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    doctor = sub.add_parser("doctor", help="check the verl registration and the optional cluster parts")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(handler=_doctor)

    adv = sub.add_parser("advantage", help="PEARL advantages for judged dialogues (JSONL)")
    adv.add_argument("file", nargs="?", help="judged dialogues, one JSON object per line (default: shipped example)")
    adv.add_argument("--gamma", type=float, default=AdvantageConfig.gamma, help="turn decay in (0, 1] (default 0.98)")
    adv.add_argument("--no-discretize", action="store_true", help="keep raw scores (ablation)")
    adv.add_argument("--aggregation", choices=AGGREGATIONS, default=AdvantageConfig.aggregation)
    adv.add_argument("--weights", type=_floats, help="comma-separated weights, one per dimension, summing to 1")
    adv.add_argument("--json", action="store_true", help="print one JSON object per dialogue")
    adv.set_defaults(handler=_advantage)
    return parser


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _doctor(args: argparse.Namespace) -> int:
    from pearl_verl.verl_plugin.doctor import format_report, report_as_dicts, run_checks

    checks = run_checks()
    print(json.dumps(report_as_dicts(checks), indent=2) if args.json else format_report(checks))
    return 1 if any(c.required and not c.ok for c in checks) else 0


def _advantage(args: argparse.Namespace) -> int:
    from pearl_verl.advantage_report import build_report, example_path, format_report, load_judged_rows, report_as_json

    config = AdvantageConfig(
        gamma=args.gamma, discretize=not args.no_discretize, aggregation=args.aggregation, weights=args.weights
    )
    path = args.file or example_path()
    report = build_report(load_judged_rows(path), config)
    if args.json:
        for row in report_as_json(report):
            print(json.dumps(row))
    else:
        print(f"input: {path}")
        print(format_report(report))
    return 0


def main_exit() -> None:
    """Console-script entry: exit with :func:`main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
