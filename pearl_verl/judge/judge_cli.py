"""``pearl-verl judge`` (score dialogues) and ``pearl-verl judge-sft-data`` (judge-SFT data)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.errors import InputError
from pearl_verl.jsonl import input_file
from pearl_verl.judge.backends import BACKEND_SETTINGS, JUDGE_BACKENDS, require_endpoint_flags_of
from pearl_verl.judge.judge_config import BACKENDS, JudgeConfig
from pearl_verl.judge.reward_info import unparsed_line
from pearl_verl.judge.scoring import AGGREGATES
from pearl_verl.llm.chat_types import UsageMeter
from pearl_verl.llm.cli_flags import add_endpoint_flags, defaults_of, endpoint_values
from pearl_verl.out_paths import output_file
from pearl_verl.progress import progress_bar
from pearl_verl.ranges import SHARE
from pearl_verl.resume_guard import check_resume, write_settings

if TYPE_CHECKING:
    from pearl_verl.judge.batch import BatchSummary

JUDGE_DEFAULTS = JudgeConfig(backend="offline")
JUDGE_FIELDS = ("parse_retries", "samples", "aggregate", "temperature", "max_tokens", *BACKEND_SETTINGS)
"""The judge's own settings that ``pearl-verl judge`` takes as flags (beside backend and the endpoint's): the LLM
judge's and each backend's ``params``."""
RESUME_SETTINGS = ("backend", "model", "structured_output", "samples", "aggregate", "temperature", "max_tokens")
"""What decides a judgement: a rerun that resumes ``-o`` must use the same (kept in ``OUT.settings.json``); a backend's
own ``params`` too (the ``fitted`` judge's parameters file; kept only for that backend, so older settings files still
resume)."""


def register(sub: argparse._SubParsersAction) -> None:
    judge = sub.add_parser(
        "judge",
        help="score a JSONL of dialogues with the PEARL judge (incremental, resumable)",
        description="Score dialogues (one EpisodeRecord JSON per line) with an LLM judge endpoint or the "
        "offline heuristic judge (a CPU test double, not the paper's judge). Results are appended to OUTPUT "
        "as they finish; re-running skips dialogues already scored.",
    )
    judge.add_argument("input", type=Path, help="dialogues: one EpisodeRecord JSON object per line (optional 'id')")
    judge.add_argument("-o", "--output", type=output_file, required=True, help="results JSONL (appended; resumed)")
    add_config_flags(judge, JudgeConfig, ("backend",), choices={"backend": BACKENDS})
    add_endpoint_flags(
        judge,
        role="judge",
        defaults=defaults_of(JUDGE_DEFAULTS),
        helps={"concurrency": "dialogues in flight"},
    )
    add_config_flags(judge, JudgeConfig, JUDGE_FIELDS, choices={"aggregate": AGGREGATES})
    judge.add_argument("--retry-failed", action="store_true", help="judge again dialogues whose result has judge_ok=0")
    judge.add_argument("--criteria", action="store_true", help="also write criterion scores and rationales")
    judge.add_argument("--no-progress", action="store_true", help="no progress bar")
    judge.set_defaults(handler=run_judge)

    sft = sub.add_parser(
        "judge-sft-data",
        help="annotated trajectories -> verl SFT parquet for judge finetuning (with the noise filter)",
    )
    sft.add_argument("input", type=Path, help="JSONL: {id, episode, annotations: [judge output, ...]} per line")
    sft.add_argument("-o", "--output", type=output_file, required=True, help="training parquet")
    sft.add_argument("--val-output", type=output_file, help="validation parquet (needs --val-fraction)")
    sft.add_argument("--val-fraction", type=SHARE.flag, default=0.0, help="share of trajectories for validation")
    sft.add_argument("--max-spread", type=SHARE.flag, default=0.5, help="largest dimension-score range across annotations")
    sft.add_argument("--no-consistency-check", action="store_true", help="keep self-contradictory annotations")
    sft.set_defaults(handler=run_sft_data)


def run_judge(args: argparse.Namespace) -> int:
    from pearl_verl.async_run import run_async
    from pearl_verl.judge.batch import judge_file
    from pearl_verl.judge.judge_config import build_judge

    require_endpoint_flags_of(args, args.backend)
    config = JudgeConfig(**config_values(args, ("backend", *JUDGE_FIELDS)), **endpoint_values(args))
    if not _has_lines(input_file(args.input, "dialogue file")):
        raise InputError(f"no dialogues in {args.input}.")  # eval-tutor's wording for an empty input
    settings = {name: getattr(config, name) for name in RESUME_SETTINGS}
    settings.update({name: getattr(config, name) for name in JUDGE_BACKENDS[config.backend].params})
    settings_path = args.output.with_name(args.output.name + ".settings.json")
    check_resume(args.output, settings_path, settings, "-o", missing_ok=True, what="judgements")
    judge = build_judge(config)
    write_settings(settings_path, settings)
    progress = progress_bar("off" if args.no_progress else "auto", None, "dialogue", "judge")
    summary = run_async(
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
    _report(summary, args.output)
    stats = getattr(judge, "stats", None)
    if stats is not None:  # this run's replies, like the means above
        unparsed = sum(stats.parse_failures.values())
        line = unparsed_line(stats.samples_parsed + unparsed, unparsed)
        if line:
            print(line)
    note = UsageMeter.note_of(judge)
    if note:
        print(note)
    if getattr(stats, "n_ignored", False):
        print(f"note: the endpoint ignores n (one sample per request), so the {config.samples} samples of each "
              "dialogue were asked for one request each (samples_per_request=false does this from the start)")
    ignored = getattr(stats, "samples_ignored", 0)
    if ignored:
        print(f"note: the endpoint returned {ignored} samples beyond those asked for (n); they were ignored")
    if JUDGE_BACKENDS[args.backend].note:
        print(f"note: {JUDGE_BACKENDS[args.backend].note}")
    code, message = _verdict(summary, args.input, args.output)
    if message is not None:
        print(message, file=sys.stderr)
    return code


def _has_lines(path: Path) -> bool:
    """Whether ``path`` holds a non-blank line (stops at the first one)."""
    with path.open("rb") as handle:  # bytes: a line that is not UTF-8 is flagged later, with its number
        return any(line.strip() for line in handle)


def _report(summary: BatchSummary, output: Path) -> None:
    """The run's summary lines on stdout."""
    flagged = f", {summary.flagged} not judged (episode ended in a backend error)" if summary.flagged else ""
    unreadable = f", {summary.unreadable} input lines hold no dialogue" if summary.unreadable else ""
    print(
        f"{output}: {summary.ok + summary.failed} judged ({summary.ok} ok, {summary.failed} failed)"
        f"{flagged}{unreadable}, "
        f"{summary.skipped} already done, {summary.total} in input"
    )
    if summary.ok:
        print("means over this run: " + json.dumps({k: round(v, 4) for k, v in summary.means().items()}))


def _verdict(summary: BatchSummary, input_path: Path, output: Path) -> tuple[int, str | None]:
    """Exit code and error line of a run, from what ``output`` holds for the input's ids.

    The code reflects the output, not just this run, so a resumed run that judged nothing new still
    exits 1 while stored judgements have failed. Episodes that ended in a backend error cannot be
    fixed by judging again and do not fail the run, unless they leave no judgement at all. Input lines
    that hold no dialogue fail it, with their line numbers: the fix is in the input, not a retry.

    Args:
        summary: the run's summary.
        input_path: the dialogue file, for the message about its unreadable lines.
        output: the results file, for the message.

    Returns:
        ``(0, None)`` when every judgeable dialogue has a judgement, else ``(1, "error: ...")``.
    """
    ok, failed, flagged = summary.ok_in_output, summary.failed_in_output, summary.flagged_in_output
    retry = "see their 'error' field, fix the cause and re-run with --retry-failed"
    if summary.unreadable_in_output:  # judging again repeats the same error: the input line must change
        lines = sorted(summary.unreadable_lines)
        shown = ", ".join(map(str, lines[:5])) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")
        also = (f"; and {failed} judgements failed: re-run with --retry-failed once those lines are fixed"
                if failed else "")
        return 1, (f"error: {input_path}: {len(lines)} lines hold no dialogue (line {shown}; their 'error' field in "
                   f"{output} says why); fix or remove those lines{also}")
    if failed and not ok:
        return 1, f"error: every judgement in {output} failed ({failed} dialogues); {retry}"
    if failed:
        return 1, f"error: {failed} of {ok + failed} dialogues in {output} have a failed judgement; {retry}"
    if flagged and not ok:
        return 1, f"error: no dialogue in {output} was judged: all {flagged} ended in a tutor or student backend error"
    return 0, None


def run_sft_data(args: argparse.Namespace) -> int:
    from pearl_verl.judge.sft_data import NoiseFilterConfig, convert_file

    config = NoiseFilterConfig(max_spread=args.max_spread, check_consistency=not args.no_consistency_check)
    report = convert_file(args.input, args.output, args.val_output, args.val_fraction, config)
    print(f"{report.trajectories} trajectories, {report.annotations} annotations -> {report.kept} SFT examples")
    for reason, count in sorted(report.dropped.items()):
        print(f"  dropped {count:>7}  {reason}")
    return 0
