"""``pearl-verl judge-check``: can the configured judge rank contrast pairs whose order is known?

With ``--human [FILE]`` it asks instead whether the judge agrees with teachers' labels on single tutor
responses (MRBench by default): :mod:`pearl_verl.judge.human_check`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.errors import InputError
from pearl_verl.judge.backends import require_endpoint_flags_of
from pearl_verl.judge.calibration import MIN_AGREEMENT, MIN_PARSE_RATE, load_pairs, shipped_pairs_path
from pearl_verl.judge.check_report import finish_check
from pearl_verl.judge.human_agreement import HUMAN_MIN_AGREEMENT, MEASURED_SPLITS
from pearl_verl.judge.judge_cli import JUDGE_DEFAULTS, JUDGE_FIELDS
from pearl_verl.judge.judge_config import BACKENDS, JudgeConfig
from pearl_verl.judge.scoring import AGGREGATES
from pearl_verl.llm.cli_flags import add_endpoint_flags, defaults_of, endpoint_values
from pearl_verl.out_paths import output_file
from pearl_verl.progress import progress_bar
from pearl_verl.ranges import POSITIVE, SHARE


def register(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "judge-check",
        help="judge contrast pairs of known order; say whether the judge can rank them (run before training)",
        description="Judge both dialogues of each calibration pair (same problem and student; one tutor better "
        "on named dimensions by construction) and report, per dimension, the share of pairs the judge orders "
        "as built, with a 95% interval, and the share of judgements that parse. Exit 1 when either is under "
        "its floor. The cluster recipes run this before training. With --human, judge every candidate next "
        "tutor turn of a human-labelled file (MRBench) instead and report, per mapped dimension, the share of "
        "differently labelled pairs the judge orders as the teachers do, and a 3-class macro-F1.",
    )
    check.add_argument("--pairs", type=Path, help="calibration pairs (JSON lines; default: the shipped set)")
    check.add_argument("--human", nargs="?", const="", metavar="FILE",
                       help="compare with human labels instead: an MRBench or BEA 2025 file (default: the shipped "
                       "MRBench, data/mrbench/MRBench_V2.json)")
    check.add_argument("--splits", default=",".join(MEASURED_SPLITS),
                       help="with --human: the splits measured, comma-separated, or 'all' for a file without "
                       "splits")
    check.add_argument("--limit", type=POSITIVE.flag, metavar="N",
                       help="with --human: only the first N conversations of the measured and of the tuning splits")
    add_config_flags(check, JudgeConfig, ("backend",), choices={"backend": BACKENDS})
    add_endpoint_flags(check, role="judge", defaults=defaults_of(JUDGE_DEFAULTS),
                       helps={"concurrency": "dialogues in flight"})
    add_config_flags(check, JudgeConfig, JUDGE_FIELDS, choices={"aggregate": AGGREGATES})
    check.add_argument("--min-agreement", type=SHARE.flag, default=None,
                       help=f"floor on the share of comparisons ordered as built (default {MIN_AGREEMENT}); with "
                       f"--human, on each mapped dimension's pairwise agreement (default {HUMAN_MIN_AGREEMENT})")
    check.add_argument("--min-parse-rate", type=SHARE.flag, default=MIN_PARSE_RATE,
                       help="floor on the share of judgements that parse")
    check.add_argument("-o", "--output", type=output_file, help="also write the report as JSON here")
    check.add_argument("--no-progress", action="store_true", help="no progress bar")
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    from pearl_verl.async_run import run_async
    from pearl_verl.judge.calibration import check_judge
    from pearl_verl.judge.judge_config import build_judge

    if args.human is not None:
        from pearl_verl.judge.human_check_cli import run_human_check

        return run_human_check(args)
    if args.limit is not None or args.splits != ",".join(MEASURED_SPLITS):
        raise InputError("--splits and --limit go with --human.")
    pairs = load_pairs(args.pairs or shipped_pairs_path())
    min_agreement = MIN_AGREEMENT if args.min_agreement is None else args.min_agreement
    require_endpoint_flags_of(args, args.backend)
    config = JudgeConfig(**config_values(args, ("backend", *JUDGE_FIELDS)), **endpoint_values(args))
    judge = build_judge(config)
    if config.needs_endpoint:  # a hanging server would otherwise look like a hanging command
        print(f"judge-check: {2 * len(pairs)} judgements, waiting for {config.base_url} (model {config.model}; "
              f"up to {config.timeout_s:g} s a request, {config.max_retries} retries)", file=sys.stderr, flush=True)
    progress = progress_bar("off" if args.no_progress else "auto", 2 * len(pairs), "dialogue", "judge-check")
    report = run_async(check_judge(judge, pairs, concurrency=args.concurrency,
                                   on_judged=progress.update if progress is not None else None))
    if progress is not None:
        progress.close()
    result = report.to_dict(min_agreement, args.min_parse_rate)
    kinds = ", ".join(f"{count} {kind}" for kind, count in Counter(pair.kind for pair in pairs).items())
    print(f"judge calibration: {len(pairs)} pairs ({kinds})")
    for dimension, estimate in result["by_dimension"].items():
        print(f"  {dimension:<8} {_share(estimate)}")
    print(f"  {'all':<8} {_share(result['agreement'])}")
    print(f"  parsed   {_share(result['parse_rate'], 'judgements')}")
    return finish_check(result, judge, args.backend, args.output)


def _share(estimate: dict[str, Any], what: str = "comparisons ordered as built") -> str:
    return (f"{estimate['mean']:6.1%} of {estimate['n']:>3} {what} "
            f"(95% interval {estimate['low']:.0%}-{estimate['high']:.0%})")
