"""``python -m pearl_verl.eval <command>``: the evaluation commands without the top-level CLI."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

EVAL_COMMAND_MODULES: tuple[str, ...] = (
    "pearl_verl.eval.tutor_cli",
    "pearl_verl.eval.simulator_cli",
    "pearl_verl.eval.rm_cli",
    "pearl_verl.eval.mtb_cli",
    "pearl_verl.eval.mathdial_cli",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one evaluation command; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m pearl_verl.eval")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for module in EVAL_COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
