"""``pearl-verl judge`` (score dialogues) and ``pearl-verl judge-sft-data`` (judge-SFT data)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pearl_verl.judge.config import BACKENDS, JudgeConfig

_DEFAULTS = JudgeConfig(backend="offline")


def register(sub: argparse._SubParsersAction) -> None:
    judge = sub.add_parser(
        "judge",
        help="score a JSONL of dialogues with the PEARL judge (incremental, resumable)",
        description="Score dialogues (one EpisodeRecord JSON per line) with an LLM judge endpoint or the "
        "offline heuristic judge (a CPU test double, not the paper's judge). Results are appended to OUTPUT "
        "as they finish; re-running skips dialogues already scored.",
    )
    judge.add_argument("input", type=Path, help="dialogues: one EpisodeRecord JSON object per line (optional 'id')")
    judge.add_argument("-o", "--output", type=Path, required=True, help="results JSONL (appended; resumed)")
    judge.add_argument("--backend", choices=BACKENDS, default="llm", help="llm endpoint or offline heuristic")
    judge.add_argument("--base-url", help="judge endpoint, e.g. http://judge-host:8000/v1")
    judge.add_argument("--model", help="served model name")
    judge.add_argument("--api-key-env", help="NAME of the environment variable holding the API key")
    judge.add_argument("--concurrency", type=int, default=_DEFAULTS.max_concurrency, help="dialogues in flight")
    judge.add_argument("--timeout", type=float, default=_DEFAULTS.timeout_s, help="seconds per HTTP attempt")
    judge.add_argument("--max-retries", type=int, default=_DEFAULTS.max_retries, help="HTTP retries per call")
    judge.add_argument("--parse-retries", type=int, default=_DEFAULTS.parse_retries, help="calls again on bad output")
    judge.add_argument("--samples", type=int, default=1, help="self-consistency samples per dialogue")
    judge.add_argument("--aggregate", choices=("mean", "median"), default="mean", help="over samples")
    judge.add_argument("--temperature", type=float, default=_DEFAULTS.temperature)
    judge.add_argument("--max-tokens", type=int, default=_DEFAULTS.max_tokens)
    judge.add_argument("--retry-failed", action="store_true", help="judge again dialogues whose result has judge_ok=0")
    judge.add_argument("--criteria", action="store_true", help="also write criterion scores and rationales")
    judge.add_argument("--no-progress", action="store_true", help="no progress bar")
    judge.set_defaults(handler=run_judge)

    sft = sub.add_parser(
        "judge-sft-data",
        help="annotated trajectories -> verl SFT parquet for judge finetuning (with the noise filter)",
    )
    sft.add_argument("input", type=Path, help="JSONL: {id, episode, annotations: [judge output, ...]} per line")
    sft.add_argument("-o", "--output", type=Path, required=True, help="training parquet")
    sft.add_argument("--val-output", type=Path, help="validation parquet (needs --val-fraction)")
    sft.add_argument("--val-fraction", type=float, default=0.0, help="share of trajectories for validation")
    sft.add_argument("--max-spread", type=float, default=0.5, help="largest dimension-score range across annotations")
    sft.add_argument("--no-consistency-check", action="store_true", help="keep self-contradictory annotations")
    sft.set_defaults(handler=run_sft_data)


def run_judge(args: argparse.Namespace) -> int:
    import asyncio

    from pearl_verl.judge.batch import judge_file
    from pearl_verl.judge.config import build_judge

    config = JudgeConfig(
        backend=args.backend,
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        timeout_s=args.timeout,
        max_retries=args.max_retries,
        max_concurrency=args.concurrency,
        parse_retries=args.parse_retries,
        samples=args.samples,
        aggregate=args.aggregate,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
    )
    if not args.input.exists():
        raise ValueError(f"input file {args.input} does not exist.")
    judge = build_judge(config)
    progress = _progress(args.no_progress)
    summary = asyncio.run(
        judge_file(
            judge,
            args.input,
            args.output,
            concurrency=args.concurrency,
            retry_failed=args.retry_failed,
            with_criteria=args.criteria,
            on_done=lambda row: progress.update(1) if progress is not None else None,
        )
    )
    if progress is not None:
        progress.close()
    print(
        f"{args.output}: {summary.judged} judged ({summary.ok} ok, {summary.failed} failed), "
        f"{summary.skipped} already done, {summary.total} in input"
    )
    if summary.ok:
        print("means over this run: " + json.dumps({k: round(v, 4) for k, v in summary.means().items()}))
    if args.backend == "offline":
        print("note: offline heuristic judge (a CPU test double), not the paper's judge")
    return 0 if summary.failed == 0 else 1


def _progress(disabled: bool) -> Any:
    if disabled or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(unit="dialogue", file=sys.stderr)


def run_sft_data(args: argparse.Namespace) -> int:
    from pearl_verl.judge.sft_data import NoiseFilterConfig, convert_file

    config = NoiseFilterConfig(max_spread=args.max_spread, check_consistency=not args.no_consistency_check)
    report = convert_file(args.input, args.output, args.val_output, args.val_fraction, config)
    print(f"{report.trajectories} trajectories, {report.annotations} annotations -> {report.kept} SFT examples")
    for reason, count in sorted(report.dropped.items()):
        print(f"  dropped {count:>7}  {reason}")
    return 0
