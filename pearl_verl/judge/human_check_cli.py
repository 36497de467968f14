"""``judge-check --human``: the command that judges MRBench's rated teacher turns and prints the agreement table.

The check itself is :mod:`pearl_verl.judge.human_check`; this module reads the flags and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pearl_verl.async_run import run_async
from pearl_verl.data.mrbench import mrbench_file
from pearl_verl.errors import InputError
from pearl_verl.judge.check_report import finish_check
from pearl_verl.judge.human_agreement import MAPPING
from pearl_verl.judge.human_check import BEA_2025_BEST, HumanCheckReport, check_human, choose_conversations


def run_human_check(args: argparse.Namespace) -> int:
    """``judge-check --human [FILE]``: the command's handler once ``--human`` is given."""
    from pearl_verl.config_flags import config_values
    from pearl_verl.judge.backends import require_endpoint_flags_of
    from pearl_verl.judge.calibration import MIN_PARSE_RATE
    from pearl_verl.judge.human_agreement import HUMAN_MIN_AGREEMENT
    from pearl_verl.judge.judge_cli import JUDGE_FIELDS
    from pearl_verl.judge.judge_config import JudgeConfig
    from pearl_verl.judge.one_turn import ONE_TURN_BACKENDS, build_one_turn_judge
    from pearl_verl.llm.cli_flags import endpoint_values
    from pearl_verl.progress import progress_bar

    if args.pairs is not None:
        raise InputError("--pairs and --human are two checks; give one.")
    if args.backend not in ONE_TURN_BACKENDS:
        raise InputError(f"--human judges one turn, which --backend {args.backend} cannot; use "
                         f"{', '.join(ONE_TURN_BACKENDS)}.")
    path = Path(args.human) if args.human else mrbench_file()
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    require_endpoint_flags_of(args, args.backend)
    config = JudgeConfig(**config_values(args, ("backend", *JUDGE_FIELDS)), **endpoint_values(args))
    min_agreement = HUMAN_MIN_AGREEMENT if args.min_agreement is None else args.min_agreement
    min_parse_rate = MIN_PARSE_RATE if args.min_parse_rate is None else args.min_parse_rate
    chosen = choose_conversations(path, splits, args.limit)  # a malformed file fails before any judge is built
    judge = build_one_turn_judge(config)
    total = sum(len(c.responses) for c in chosen[0] + chosen[1])
    if config.needs_endpoint:  # a hanging server would otherwise look like a hanging command
        print(f"judge-check --human: {total} judgements, waiting for {config.base_url} (model {config.model}; "
              f"up to {config.timeout_s:g} s a request, {config.max_retries} retries)", file=sys.stderr, flush=True)
    progress = progress_bar("off" if args.no_progress else "auto", total, "response", "judge-check --human")
    report = run_async(check_human(judge, path, splits, args.limit, args.concurrency,
                                   progress.update if progress is not None else None, chosen))
    if progress is not None:
        progress.close()
    result = report.to_dict(min_agreement, min_parse_rate)
    _print_table(report, result)
    return finish_check(result, judge.judge, args.backend, args.output)


def _print_table(report: HumanCheckReport, result: dict[str, Any]) -> None:
    tuning = (f"thresholds chosen on {'+'.join(result['tuning_splits'])}: {result['tuning_conversations']} "
              f"conversations, {result['tuning_responses']:,} responses" if report.tuning else "no thresholds")
    print(f"judge vs human teachers: {report.file.name}, split {','.join(report.splits)}: "
          f"{result['conversations']} conversations, {result['responses']:,} responses ({tuning})")
    print(f"  {'human dimension':<24} {'agree':>6} {'95% interval':>12} {'pairs':>6} {'ties':>5} {'failed':>6} "
          f"{'macro-F1':>8} {'thresholds':>11}  our score")
    for dimension, criteria in report.mapping.items():
        if not criteria:
            print(f"  {dimension:<24} {'not mapped: no criterion of ours speaks to it':>60}")
            continue
        row = result["by_dimension"][dimension]
        share = row["agreement"]
        interval = f"{share['low']:.0%}-{share['high']:.0%}" if share else "-"
        agree = f"{share['mean']:6.1%}" if share else f"{'-':>6}"
        f1 = f"{row['macro_f1']:8.3f}" if row["macro_f1"] is not None else f"{'-':>8}"
        cuts = "/".join("none" if t > 1 else f"{t:.3g}" for t in row["thresholds"]) if row["thresholds"] else "-"
        ours = criteria[0] if len(criteria) == 1 else f"mean({', '.join(criteria)})"
        counts = f"{row['pairs']:>6} {row['ties']:>5} {row['failed']:>6}"
        print(f"  {dimension:<24} {agree} {interval:>12} {counts} {f1} {cuts:>11}  {ours}")
    parse = result["parse_rate"]
    print(f"  parsed {parse['mean']:.1%} of {parse['n']:,} judgements "
          f"(95% interval {parse['low']:.0%}-{parse['high']:.0%})")
    for note in result["notes"]:
        print(f"note: {note}")
    best = ", ".join(f"{d} {v}" for d, v in BEA_2025_BEST.items())
    seen = "the fitted judge was fitted on labels of this kind" if report.mapping is not MAPPING else \
        "this judge never saw them"
    print(f"note: BEA 2025's best macro-F1 ({best}) came from classifiers trained on these labels; {seen}")
