"""``pearl-verl eval-tutor``: tutors x student simulators x problems, matched, judged, tabulated.

Examples::

    # two endpoints, our simulator, the trained judge
    pearl-verl eval-tutor data/gsm8k/test.jsonl --limit 250 \\
        --tutor name=base,base_url=http://t1:8000/v1,model=qwen3-30b-a3b \\
        --tutor name=pearl,base_url=http://t2:8000/v1,model=pearl-30b \\
        --student-backend llm --student-base-url http://s:8000/v1 --student-model student \\
        --judge-base-url http://j:8000/v1 --judge-model pearl-judge --judge-label PEARL-RM --out runs/main

    # cross-simulator table: add the baselines (same student endpoint)
    ... --simulator pearl --simulator mathdial --simulator socraticlm --out runs/cross

    # CPU smoke run: scripted tutors, offline student and offline heuristic judge (test doubles)
    pearl-verl eval-tutor pearl_verl/resources/data/gsm8k/test_first50.jsonl --limit 10 \\
        --tutor name=socratic,scripted=socratic --tutor name=leaking,scripted=leaking --judge offline --out runs/smoke

The output directory holds ``manifest.json`` (protocol and matched items), ``results.jsonl`` (one line
per dialogue, appended as it finishes; rerunning resumes), ``report.md``, ``summary.json``,
``radar.png`` and ``bars.png``. ``--report-only`` rebuilds the last four from the results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.data.problem_files import add_problem_file_args
from pearl_verl.errors import InputError
from pearl_verl.eval.common_cli import (
    add_judge_flags,
    add_progress_flag,
    add_student_flags,
    judge_setup,
    student_setup,
)
from pearl_verl.eval.protocol import EvalProtocol
from pearl_verl.judge.reward_info import reply_counts, unparsed_line
from pearl_verl.llm.chat_types import UsageMeter
from pearl_verl.llm.cli_flags import EndpointSpecAction
from pearl_verl.out_paths import output_dir
from pearl_verl.ranges import POSITIVE
from pearl_verl.student.fallbacks import MAX_FALLBACK_RATE, FallbackRates, add_fallback_flag
from pearl_verl.student.student_config import SIMULATORS
from pearl_verl.write_whole import write_whole


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-tutor",
        help="evaluate tutors against a student simulator under matched conditions, judged (paper's protocol)",
        description="Run every tutor against the same matched (problem, student condition, seed) items with the "
        "same stopping rule and sampling, judge each dialogue, and write the paper's table with 95%% intervals, "
        "a radar and a bar plot. Results are appended as they finish; rerunning resumes.",
    )
    add_problem_file_args(parser, required=False)  # none with --report-only
    parser.add_argument(
        "--tutor", action=EndpointSpecAction, default=[], metavar="SPEC", help="tutor spec (repeat): see docs/eval.md"
    )
    parser.add_argument(
        "--simulator", action="append", choices=SIMULATORS, help="student simulator(s) (repeat; default pearl)"
    )
    parser.add_argument("--out", type=output_dir, required=True, help="run directory (created; resumed when it exists)")
    protocol = parser.add_argument_group("protocol (the same for every tutor)")
    add_config_flags(protocol, EvalProtocol, zero_is_null=("top_k",),
                     helps={"top_k": "tutor top-k"})
    add_student_flags(parser)
    add_judge_flags(parser)
    parser.add_argument("--concurrency", type=POSITIVE.flag, default=16, help="dialogues in flight")
    parser.add_argument("--retry-failed", action="store_true", help="run flagged dialogues again")
    parser.add_argument("--report-only", action="store_true", help="rebuild report and plots from the results")
    add_fallback_flag(parser)
    add_progress_flag(parser)
    parser.set_defaults(handler=run)


def build_protocol(args: argparse.Namespace) -> EvalProtocol:
    values = config_values(args, (f.name for f in dataclasses.fields(EvalProtocol)))
    return EvalProtocol(**{**values, "top_k": values["top_k"] or None})


def run(args: argparse.Namespace) -> int:
    from pearl_verl.eval.protocol import read_manifest

    if args.report_only:
        manifest = read_manifest(args.out)
        if manifest is None:
            raise InputError(f"{args.out} holds no eval-tutor run (no manifest.json).")
        return _report(args.out, manifest, print_table=True, max_fallback_rate=args.max_fallback_rate)
    manifest, flagged, student_mode = _run(args)
    code = _report(args.out, manifest, print_table=True, max_fallback_rate=args.max_fallback_rate,
                   student_mode=student_mode)
    return code if flagged == 0 else 1


def _run(args: argparse.Namespace) -> tuple[Any, int, str | None]:
    from pearl_verl.async_run import run_async
    from pearl_verl.data.location import dataset_file
    from pearl_verl.dialogue.episode_runner import EpisodeLimits
    from pearl_verl.eval.common_cli import build_simulators, judge_config
    from pearl_verl.eval.protocol import (
        Manifest,
        draw_items,
        load_eval_problems,
        read_manifest,
        resolve_manifest,
        write_manifest,
    )
    from pearl_verl.eval.runner import RESULTS, plan_jobs, run_eval
    from pearl_verl.eval.tutors import build_tutor, parse_tutor_spec
    from pearl_verl.judge.judge_config import build_judge
    from pearl_verl.progress import progress_bar

    if not args.tutor:
        raise InputError("give at least one --tutor (e.g. --tutor name=pearl,base_url=http://host:8000/v1,model=m).")
    specs = [parse_tutor_spec(text) for text in args.tutor]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"tutor names {names} must be unique.")
    simulators = list(dict.fromkeys(args.simulator or ["pearl"]))
    protocol = build_protocol(args)
    setup = {"student": student_setup(args), "judge": judge_setup(args)}
    stored = read_manifest(args.out)
    if args.problems:
        items = tuple(draw_items(load_eval_problems([dataset_file(p) for p in args.problems], args.limit), protocol))
    elif stored is not None:
        items = stored.items
    else:
        raise InputError(f"give problem files: {args.out} holds no run whose matched items could be reused.")
    fresh = Manifest(protocol, items, setup, {s.name: s.describe() for s in specs}, tuple(simulators))
    manifest = resolve_manifest(args.out, fresh)
    write_manifest(args.out, manifest)
    tutors = {s.name: build_tutor(s, protocol.sampling(), args.concurrency, protocol.seed) for s in specs}
    config = judge_config(args)
    judge = build_judge(config) if config is not None else None
    jobs = plan_jobs(manifest.items, names, simulators)
    bar = progress_bar(args.progress, len(jobs), "dialogue", "eval-tutor")
    students = build_simulators(args, simulators)
    summary = run_async(
        run_eval(
            jobs,
            tutors,
            students,
            judge,
            EpisodeLimits(protocol.max_turns),
            args.out / RESULTS,
            concurrency=args.concurrency,
            retry_failed=args.retry_failed,
            on_done=(lambda row: bar.update(1)) if bar is not None else None,
            on_start=(lambda done: bar.update(done)) if bar is not None else None,
        )
    )
    if bar is not None:
        bar.close()
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary.end_reasons.items())) or "none"
    print(
        f"{args.out / RESULTS}: {summary.ran} dialogues run ({summary.ok} ok, {summary.flagged} flagged), "
        f"{summary.skipped} already done, {summary.planned} planned | end reasons: {reasons}"
    )
    for role, holder in [*((f"student ({name})", sim) for name, sim in students.items()), ("judge", judge)]:
        note = UsageMeter.note_of(holder)
        if note:
            print(f"{role} {note}")
    modes = {UsageMeter.mode_of(sim) for sim in students.values()} - {None}
    return manifest, summary.flagged, modes.pop() if len(modes) == 1 else None


def _report(folder: Path, manifest: Any, print_table: bool, max_fallback_rate: float = MAX_FALLBACK_RATE,
            student_mode: str | None = None) -> int:
    """report.md, summary.json and the plots from results.jsonl; the exit code of the fallback check.

    ``student_mode``: the structured output the served students used this run (it picks the advice).
    """
    from pearl_verl.eval.plots import grouped_bars, radar_plot
    from pearl_verl.eval.runner import RESULTS, read_results
    from pearl_verl.eval.tables import DIMENSION_TITLES, build_report

    rows = list(read_results(folder / RESULTS).values())
    tutors, simulators = list(manifest.tutors), list(manifest.simulators)
    label = str(manifest.setup["judge"]["label"])
    markdown, summary = build_report(rows, tutors, simulators, label)
    fallbacks = FallbackRates.of(row["episode"].get("student_trace", ()) for row in rows if row.get("episode"))
    summary["student_fallbacks"] = fallbacks.to_dict()
    if fallbacks.line():
        markdown += f"\n\n{fallbacks.line()}."
    replies, unparsed = reply_counts(row.get("judge") for row in rows)
    summary["judge_replies"] = {"replies": replies, "unparsed": unparsed}
    judge_line = unparsed_line(replies, unparsed)
    if judge_line:
        markdown += f"\n\n{judge_line}."
    summary["tutor_cut_replies"] = cut = cut_replies(rows, tutors)
    cut_line = cut_replies_line(cut, manifest.protocol.max_tokens)
    if cut_line:
        markdown += f"\n\n{cut_line}."
    write_whole(folder / "report.md", markdown + "\n")
    write_whole(folder / "summary.json", json.dumps(summary, indent=1))
    groups = summary["groups"]
    if groups:
        from pearl_verl.stats import Estimate

        def label_of(g: dict[str, Any]) -> str:
            return g["tutor"] if len(simulators) == 1 else f"{g['tutor']} / {g['simulator']}"

        dims = list(DIMENSION_TITLES)
        radar_plot(
            {label_of(g): [g["dims"][d]["mean"] for d in dims] for g in groups},
            list(DIMENSION_TITLES.values()),
            "Tutoring quality per dimension (0-100)",
            folder / "radar.png",
        )
        grouped_bars(
            {label_of(g): [Estimate(**g["dims"][d]) for d in dims] + [Estimate(**g["avg"])] for g in groups},
            [*DIMENSION_TITLES.values(), "Avg"],
            "Tutoring quality per dimension (mean, 95% CI)",
            "score (0-100)",
            folder / "bars.png",
        )
    if print_table:
        print(markdown)
        print(
            f"wrote {folder / 'report.md'}, {folder / 'summary.json'}"
            + (f", {folder / 'radar.png'}, {folder / 'bars.png'}" if groups else " (no judged dialogue: no plots)")
        )
    if cut_line:  # truncated messages are still judged: the reader must know the scores include them
        print(f"warning: {cut_line}; those messages end mid-way: raise --max-tokens (the protocol's default is the "
              "paper's 8192)", file=sys.stderr)
    verdict = fallbacks.verdict(max_fallback_rate, flag="--student-structured-output", mode=student_mode)
    if verdict is not None:
        print(verdict, file=sys.stderr)
        return 1
    return 0


def cut_replies(rows: list[dict[str, Any]], tutors: list[str]) -> dict[str, dict[str, int]]:
    """Per tutor: its messages in the run's dialogues, and those the server cut at ``max_tokens``."""
    counts = {name: {"cut": 0, "replies": 0} for name in tutors}
    for row in rows:
        if row.get("episode") and row.get("tutor") in counts:
            counts[row["tutor"]]["cut"] += int(row.get("tutor_cut_replies") or 0)
            counts[row["tutor"]]["replies"] += sum(t["role"] == "tutor" for t in row["episode"]["turns"])
    return counts


def cut_replies_line(counts: dict[str, dict[str, int]], max_tokens: int | None) -> str | None:
    """``tutor replies cut at --max-tokens N: name a/b (x%), ...`` for the tutors with any; None when none was."""
    cut = [f"{name} {c['cut']}/{c['replies']} ({100 * c['cut'] / c['replies']:.0f}%)"
           for name, c in counts.items() if c["cut"]]
    return f"tutor replies cut at --max-tokens {max_tokens}: " + ", ".join(cut) if cut else None
