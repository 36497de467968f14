"""``python -m pearl_verl.eval <command>``: the evaluation commands alone (``pearl-verl`` has them too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pearl_verl import cli

EVAL_COMMAND_MODULES: tuple[str, ...] = (
    "pearl_verl.eval.tutor_cli",
    "pearl_verl.eval.simulator_cli",
    "pearl_verl.eval.rm_cli",
    "pearl_verl.eval.mtb_cli",
    "pearl_verl.eval.mathdial_cli",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one evaluation command; returns the exit code."""
    return cli.main(argv, EVAL_COMMAND_MODULES, prog="python -m pearl_verl.eval")


if __name__ == "__main__":
    sys.exit(main())
