"""The fault drill: 512 episodes of rollout + judging + advantage against endpoints failing 20% of requests.

Runs :func:`pearl_verl.faults.drill.run_drill` (see that module for the stages), then every check
of :mod:`pearl_verl.faults.checks`, and prints the numbers and the check results as Markdown. Exits
1 when any check finds a violation. The test suite runs the same drill (tests/faults/).

    python bench/bench_faults.py [--seed 0] [--groups 64] [--fault-rate 0.2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pearl_verl.faults.checks import run_checks  # noqa: E402
from pearl_verl.faults.drill import DrillConfig, run_drill  # noqa: E402
from pearl_verl.faults.drill_report import markdown, summarize  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", type=int, default=64, help="problems; episodes = groups x group size")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of requests faulted, per endpoint")
    parser.add_argument("--workdir", type=Path, help="keep episodes.jsonl and scores.jsonl here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the numbers and violations to this JSON file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # each injected failure logs a warning; the table counts them
    config = DrillConfig(
        groups=args.groups,
        group_size=args.group_size,
        fault_rate=args.fault_rate,
        seed=args.seed,
        kill_after=min(DrillConfig.kill_after, args.groups * args.group_size - 1),
    )
    with tempfile.TemporaryDirectory() as scratch:
        report = run_drill(config, args.workdir or Path(scratch))
    summary, violations = summarize(report), run_checks(report)
    print(markdown(summary, violations))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "violations": violations}, indent=2))
    found = {name: v for name, v in violations.items() if v}
    for name, problems in found.items():
        print(f"\n{name}: {len(problems)} violation(s), e.g. {problems[:3]}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
