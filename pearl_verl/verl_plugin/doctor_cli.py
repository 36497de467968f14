"""``pearl-verl doctor``."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check the verl registration and the optional cluster parts")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.verl_plugin.doctor import format_report, report_as_dicts, run_checks

    checks = run_checks()
    print(json.dumps(report_as_dicts(checks), indent=2) if args.json else format_report(checks))
    return 1 if any(c.required and not c.ok for c in checks) else 0
