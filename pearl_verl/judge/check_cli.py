"""``pearl-verl judge-check``: can the configured judge rank contrast pairs whose order is known?"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.judge.calibration import MIN_AGREEMENT, MIN_PARSE_RATE, load_pairs, shipped_pairs_path
from pearl_verl.judge.config import BACKENDS, JudgeConfig
from pearl_verl.judge.judge_cli import JUDGE_DEFAULTS, JUDGE_FIELDS
from pearl_verl.judge.scoring import AGGREGATES
from pearl_verl.llm.cli_flags import add_endpoint_flags, defaults_of, endpoint_values, require_endpoint_flags
from pearl_verl.llm.types import UsageMeter
from pearl_verl.out_paths import output_file
from pearl_verl.progress import progress_bar
from pearl_verl.ranges import SHARE


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "judge-check",
        help="judge contrast pairs of known order; say whether the judge can rank them (run before training)",
        description="Judge both dialogues of each calibration pair (same problem and student; one tutor better "
        "on named dimensions by construction) and report, per dimension, the share of pairs the judge orders "
        "as built, with a 95% interval, and the share of judgements that parse. Exit 1 when either is under "
        "its floor. The cluster recipes run this before training.",
    )
    check.add_argument("--pairs", type=Path, help="calibration pairs (JSON lines; default: the shipped set)")
    add_config_flags(check, JudgeConfig, ("backend",), choices={"backend": BACKENDS})
    add_endpoint_flags(check, role="judge", defaults=defaults_of(JUDGE_DEFAULTS),
                       helps={"concurrency": "dialogues in flight (default %(default)s)"})
    add_config_flags(check, JudgeConfig, JUDGE_FIELDS, choices={"aggregate": AGGREGATES})
    check.add_argument("--min-agreement", type=SHARE.flag, default=MIN_AGREEMENT,
                       help="floor on the share of comparisons ordered as built (default %(default)s)")
    check.add_argument("--min-parse-rate", type=SHARE.flag, default=MIN_PARSE_RATE,
                       help="floor on the share of judgements that parse (default %(default)s)")
    check.add_argument("-o", "--output", type=output_file, help="also write the report as JSON here")
    check.add_argument("--no-progress", action="store_true", help="no progress bar")
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    import asyncio

    from pearl_verl.judge.calibration import check_judge
    from pearl_verl.judge.config import build_judge

    pairs = load_pairs(args.pairs or shipped_pairs_path())
    if args.backend == "llm":
        require_endpoint_flags(args, "", "judge", "--backend offline (a CPU test double)")
    config = JudgeConfig(**config_values(args, ("backend", *JUDGE_FIELDS)), **endpoint_values(args))
    judge = build_judge(config)
    if config.needs_endpoint:  # a hanging server would otherwise look like a hanging command
        print(f"judge-check: {2 * len(pairs)} judgements, waiting for {config.base_url} (model {config.model}; "
              f"up to {config.timeout_s:g} s a request, {config.max_retries} retries)", file=sys.stderr, flush=True)
    progress = progress_bar("off" if args.no_progress else "auto", 2 * len(pairs), "dialogue", "judge-check")
    report = asyncio.run(check_judge(judge, pairs, concurrency=args.concurrency,
                                     on_judged=progress.update if progress is not None else None))
    if progress is not None:
        progress.close()
    result = report.to_dict(args.min_agreement, args.min_parse_rate)
    kinds = ", ".join(f"{count} {kind}" for kind, count in Counter(pair.kind for pair in pairs).items())
    print(f"judge calibration: {len(pairs)} pairs ({kinds})")
    for dimension, estimate in result["by_dimension"].items():
        print(f"  {dimension:<8} {_share(estimate)}")
    print(f"  {'all':<8} {_share(result['agreement'])}")
    print(f"  parsed   {_share(result['parse_rate'], 'judgements')}")
    note = UsageMeter.note_of(judge)
    if note:
        print(note)
    if args.backend == "offline":
        print("note: offline heuristic judge (a CPU test double), not the paper's judge")
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if result["passed"]:
        print(result["verdict"])
        return 0
    for failure in result["failures"][:3]:
        print(f"  failed: {failure}", file=sys.stderr)
    print(f"error: {result['verdict']}", file=sys.stderr)
    return 1


def _share(estimate: dict[str, Any], what: str = "comparisons ordered as built") -> str:
    return (f"{estimate['mean']:6.1%} of {estimate['n']:>3} {what} "
            f"(95% interval {estimate['low']:.0%}-{estimate['high']:.0%})")
