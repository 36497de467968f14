"""``pearl-verl eval-simulator``: the paper's simulator statistics and the controllability plot.

Examples::

    # annotate eval-tutor dialogues with an external model (the paper's protocol)
    pearl-verl eval-simulator runs/cross/results.jsonl --annotator llm \\
        --annotator-base-url https://api.example/v1 --annotator-model strong-model --annotator-api-key-env KEY \\
        --out runs/sim

    # offline: the simulator's own planned labels (labelled as such, not annotations)
    pearl-verl eval-simulator runs/smoke/results.jsonl --annotator planned --out runs/sim-planned

Writes ``annotations.jsonl`` (incremental, resumable), ``simulator_report.md``,
``simulator_summary.json`` and ``controllability.png``. Dialogues for the controllability curve come
from ``pearl-verl eval-tutor --ability all`` (each problem once per ability level).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pearl_verl.errors import InputError
from pearl_verl.eval.annotate import LLMAnnotator
from pearl_verl.eval.common_cli import add_progress_flag
from pearl_verl.llm.cli_flags import CONNECTION_FLAGS, add_endpoint_flags, endpoint_config
from pearl_verl.out_paths import output_dir
from pearl_verl.ranges import COUNT, POSITIVE
from pearl_verl.student.fallbacks import FallbackRates, add_fallback_flag
from pearl_verl.write_whole import write_whole


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-simulator",
        help="simulator diversity statistics and ability controllability from annotated dialogues",
        description="Annotate student replies (an LLM annotator with the strict 13-label schema, or the "
        "simulator's planned labels offline) and report the paper's simulator statistics per simulator, "
        "with the ability-controllability plot.",
    )
    parser.add_argument("dialogues", nargs="+", type=Path, help="eval-tutor results.jsonl or EpisodeRecord JSONL files")
    parser.add_argument("--name", help="simulator name for dialogues whose lines carry none (default: file stem)")
    parser.add_argument("--out", type=output_dir, required=True, help="output directory (resumed when it exists)")
    parser.add_argument("--annotator", choices=("llm", "planned"), default="llm",
                        help="label the student replies with an LLM endpoint, or take the simulator's planned labels")
    add_endpoint_flags(parser, "annotator-", role="annotator", flags=CONNECTION_FLAGS)  # in flight: --concurrency
    parser.add_argument("--annotator-max-tokens", type=POSITIVE.flag, default=LLMAnnotator.DEFAULT_MAX_TOKENS,
                        help="cap on one annotation's tokens")
    parser.add_argument("--parse-retries", type=COUNT.flag, default=2, help="extra annotator calls on a reply that fails the schema")
    parser.add_argument("--concurrency", type=POSITIVE.flag, default=16, help="annotator requests in flight")
    parser.add_argument("--retry-failed", action="store_true", help="annotate flagged dialogues again")
    add_fallback_flag(parser, role="evaluated student")
    add_progress_flag(parser)
    parser.set_defaults(handler=run)


def build_annotator(args: argparse.Namespace):
    from pearl_verl.eval.annotate import LLMAnnotator, PlannedLabels

    if args.annotator == "planned":
        return PlannedLabels()
    if not args.annotator_base_url or not args.annotator_model:
        raise InputError(
            "--annotator llm needs --annotator-base-url and --annotator-model (or --annotator planned offline)."
        )
    from pearl_verl.llm.chat_types import SamplingConfig
    from pearl_verl.llm.client import OpenAIChatClient

    sampling = SamplingConfig(temperature=0.0, max_tokens=args.annotator_max_tokens)
    endpoint = endpoint_config(args, "annotator-", max_concurrency=args.concurrency)
    return LLMAnnotator(OpenAIChatClient(endpoint, sampling), args.annotator_model, sampling, args.parse_retries)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.async_run import run_async
    from pearl_verl.dialogue.student_contract import ABILITY_LEVELS
    from pearl_verl.eval.plots import line_with_ci
    from pearl_verl.eval.runner import read_results
    from pearl_verl.eval.simulator_stats import (
        annotate_dialogues,
        read_dialogues,
        simulator_markdown,
        simulator_summary,
    )
    from pearl_verl.progress import progress_bar
    from pearl_verl.stats import Estimate

    dialogues = [d for path in args.dialogues for d in read_dialogues(path, args.name)]
    keys = [d.key for d in dialogues]
    if len(set(keys)) != len(keys):
        raise InputError("two dialogues share an id; give each input file distinct ids (or a distinct --name).")
    annotator = build_annotator(args)
    output = args.out / "annotations.jsonl"
    bar = progress_bar(args.progress, len(dialogues), "dialogue", "eval-simulator")
    ran, skipped = run_async(
        annotate_dialogues(
            annotator,
            dialogues,
            output,
            args.concurrency,
            args.retry_failed,
            (lambda row: bar.update(1)) if bar is not None else None,
        )
    )
    if bar is not None:
        bar.close()
    wanted = set(keys)
    rows = [r for k, r in read_results(output).items() if k in wanted]
    simulators = list(dict.fromkeys(d.simulator for d in dialogues))
    summary = simulator_summary(rows, simulators)
    fallbacks = {s: fallback_rates(dialogues, s) for s in simulators}
    for simulator, rates in fallbacks.items():
        summary[simulator]["student_fallbacks"] = rates.to_dict()
    markdown = simulator_markdown(summary, annotator.source)
    write_whole(args.out / "simulator_report.md", markdown)
    write_whole(args.out / "simulator_summary.json", json.dumps({"source": annotator.source, "simulators": summary},
                                                                indent=1))
    curves = {
        s: [Estimate(**v["controllability"][b]).scaled(100) for b in ABILITY_LEVELS]
        for s, v in summary.items()
        if all(b in v["controllability"] for b in ABILITY_LEVELS)
    }
    if curves:
        line_with_ci(
            curves,
            list(ABILITY_LEVELS),
            "Response accuracy by student ability level",
            "ability level (profile sum: low 5-8, medium 9-11, high 12-15)",
            "correct attempts (%)",
            args.out / "controllability.png",
        )
    flagged = sum(v["flagged"] for v in summary.values())
    print(f"{output}: {ran} annotated now, {skipped} already done, {flagged} flagged (excluded)")
    print(markdown)
    plot = f", {args.out / 'controllability.png'}" if curves else " (controllability needs all three ability levels)"
    print(f"wrote {args.out / 'simulator_report.md'}, {args.out / 'simulator_summary.json'}{plot}")
    verdicts = [(s, r.verdict(args.max_fallback_rate, flag="eval-tutor --student-structured-output")) for s, r in
                fallbacks.items()]
    for simulator, verdict in verdicts:
        if verdict is not None:  # its statistics describe the rules, not the student model
            print(f"{simulator}: {verdict}", file=sys.stderr)
    return 0 if flagged == 0 and all(v is None for _, v in verdicts) else 1


def fallback_rates(dialogues: list, simulator: str) -> FallbackRates:
    """How many of one simulator's replies fell back to the rules, from its dialogues' student traces."""
    return FallbackRates.of([state.to_dict() for state in d.episode.student_trace]
                            for d in dialogues if d.simulator == simulator)
