"""``pearl-verl advantage [FILE]``."""

from __future__ import annotations

import argparse
import json

from pearl_verl.advantage.advantage_config import AGGREGATIONS, AdvantageConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("advantage", help="PEARL advantages for judged dialogues (JSONL)")
    parser.add_argument("file", nargs="?", help="judged dialogues, one JSON object per line (default: shipped example)")
    parser.add_argument("--gamma", type=AdvantageConfig.RANGES["gamma"].flag, default=AdvantageConfig.gamma,
                        help="turn decay")
    parser.add_argument("--no-discretize", action="store_true", help="keep raw scores (ablation)")
    parser.add_argument("--aggregation", choices=AGGREGATIONS, default=AdvantageConfig.aggregation,
                        help="how the dimensions' scores become one advantage")
    parser.add_argument("--weights", type=floats, help="comma-separated weights, one per dimension, summing to 1")
    parser.add_argument("--json", action="store_true", help="print one JSON object per dialogue")
    parser.set_defaults(handler=run)


def floats(text: str) -> tuple[float, ...]:
    """argparse type: ``"0.5,0.5"`` -> ``(0.5, 0.5)``."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from pearl_verl.advantage.report import build_report, example_path, format_report, load_judged_rows, report_as_json

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
