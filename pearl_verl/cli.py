"""``pearl-verl <command>``: the package's command line.

Each command lives in its own module, which exposes ``register(subparsers)``: it adds one
sub-parser and sets ``handler`` (``args -> exit code``). Heavy imports stay inside the handlers so
``pearl-verl --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
from collections.abc import Sequence

from pearl_verl import __version__
from pearl_verl.advantage.failure_guard import TrainingStalled
from pearl_verl.errors import InputError

COMMAND_MODULES: tuple[str, ...] = (
    "pearl_verl.verl_plugin.doctor_cli",
    "pearl_verl.advantage.report_cli",
    "pearl_verl.student.simulate_cli",
    "pearl_verl.knowledge.decompose_cli",
    "pearl_verl.judge.judge_cli",
    "pearl_verl.eval.tutor_cli",
    "pearl_verl.eval.simulator_cli",
    "pearl_verl.eval.rm_cli",
    "pearl_verl.eval.mtb_cli",
    "pearl_verl.eval.mathdial_cli",
    "pearl_verl.compare.cli",
    "pearl_verl.data.prepare_cli",
    "pearl_verl.sft.gen_cli",
    "pearl_verl.local.train_cli",
    "pearl_verl.cluster.plan_cli",
    "pearl_verl.view.view_cli",
)


def main(
    argv: Sequence[str] | None = None, modules: Sequence[str] = COMMAND_MODULES, prog: str = "pearl-verl"
) -> int:
    """Run one command of ``modules``; returns the process exit code."""
    parser = build_parser(modules, prog)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except InputError as exc:
        return _report(exc, 2, args.verbose)
    except TrainingStalled as exc:  # not the user's input: the endpoints failed, exit 1
        return _report(exc, 1, args.verbose)


def _report(exc: Exception, code: int, verbose: bool) -> int:
    """One ``error:`` line for an expected failure (its traceback too under ``-v``); returns ``code``.

    Only the project's own :class:`InputError` and :class:`TrainingStalled` get here: any other
    exception, a library's ``ValueError`` included, is a bug and keeps its traceback.
    """
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"error: {exc}", file=sys.stderr)
    return code


def build_parser(modules: Sequence[str] = COMMAND_MODULES, prog: str = "pearl-verl") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="PEARL Socratic-tutor RL as a verl plugin.")
    parser.add_argument("--version", action="version", version=f"pearl_verl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for module in modules:
        importlib.import_module(module).register(sub)
    return parser


def main_exit() -> None:
    """Console-script entry: exit with :func:`main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
