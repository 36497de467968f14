"""``pearl-verl eval-rm``: reward-model agreement with pairwise preferences, by margin bucket.

Examples::

    # the trained judge (PEARL-RM) on the 300-pair study file
    pearl-verl eval-rm pairs.jsonl --rm judge --judge-base-url http://j:8000/v1 --judge-model pearl-judge \\
        --label PEARL-RM --out runs/rm-pearl

    # a general chat model asked directly which dialogue is better
    pearl-verl eval-rm pairs.jsonl --rm pairwise --rm-base-url https://api.example/v1 --rm-model m \\
        --rm-api-key-env KEY --label "model m (pairwise)" --out runs/rm-m

    # a scalar sequence-classification reward model from a local directory (e.g. MathTutorBench's)
    pearl-verl eval-rm pairs.jsonl --rm hf --rm-path /models/pedagogical-rm --label "MathTutorBench RM" \\
        --out runs/rm-mtb

    # build pairs from a judged eval-tutor run (preferred = higher judge score, margin = score gap)
    pearl-verl eval-rm --make-pairs runs/main/results.jsonl --pair-tutors base,pearl --pairs-out pairs.jsonl

Writes ``rm_scores.jsonl`` (one line per pair, incremental, resumable), ``rm_report.md``,
``rm_summary.json`` and ``rm_agreement.png``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pearl_verl.errors import InputError
from pearl_verl.eval.common_cli import add_judge_flags, add_progress_flag
from pearl_verl.jsonl import json_line, read_text
from pearl_verl.llm.cli_flags import CONNECTION_FLAGS, add_endpoint_flags, endpoint_config
from pearl_verl.out_paths import output_dir, output_file
from pearl_verl.ranges import POSITIVE, SEED
from pearl_verl.row_kinds import stamped
from pearl_verl.write_whole import write_whole

MTB_STYLE_SYSTEM_PROMPT = (
    "Rate the pedagogical quality of the teacher's responses: good scaffolding, correct and actionable feedback "
    "through questions, hints and nudges; revealing the full answer is not good teaching."
)
"""Our wording of a scalar pedagogical RM's system prompt; pass the model's own training prompt with
``--rm-system-prompt`` for scores faithful to that model."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-rm",
        help="agreement of a reward model with pairwise preferences, overall and per margin bucket",
        description="Score preference pairs (two dialogues for the same problem and student condition, a preferred "
        "side, a margin bucket) with a reward model and report agreement with 95%% intervals.",
    )
    parser.add_argument("pairs", nargs="?", type=Path, help="preference pairs JSONL")
    parser.add_argument("--out", type=output_dir, help="output directory (resumed when it exists)")
    parser.add_argument("--rm", choices=("judge", "pairwise", "hf"), default="judge", help="kind of reward model")
    parser.add_argument("--label", help="the reward model's name in the table")
    add_endpoint_flags(  # its requests in flight are --concurrency
        parser,
        "rm-",
        flags=CONNECTION_FLAGS,
        helps={
            "base-url": "--rm pairwise: chat endpoint",
            "model": "--rm pairwise: model name as served",
            "api-key-env": "--rm pairwise: NAME of the environment variable with the key",
        },
    )
    parser.add_argument("--rm-path", help="--rm hf: local sequence-classification model directory")
    parser.add_argument("--rm-system-prompt", type=Path, help="--rm hf: file with the RM's system prompt")
    parser.add_argument("--seed", type=SEED.flag, default=0, help="--rm pairwise: A/B order randomisation")
    parser.add_argument("--concurrency", type=POSITIVE.flag, default=8, help="pairs scored at once")
    parser.add_argument("--retry-failed", action="store_true", help="score flagged pairs again")
    make = parser.add_argument_group("building pairs from an eval-tutor run")
    make.add_argument("--make-pairs", type=Path, help="a judged eval-tutor results.jsonl")
    make.add_argument("--pair-tutors", help="TUTOR_A,TUTOR_B")
    make.add_argument("--margins", default="5,15", help="low/medium and medium/high score-gap thresholds (0-100)")
    make.add_argument("--pairs-out", type=output_file, help="where to write the pairs JSONL")
    add_judge_flags(parser, allow_none=False)
    add_progress_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.make_pairs is not None:
        return _make_pairs(args)
    if args.pairs is None or args.out is None:
        raise InputError("give the pairs file and --out (or --make-pairs RESULTS --pair-tutors A,B --pairs-out FILE).")
    return _evaluate(args)


def _make_pairs(args: argparse.Namespace) -> int:
    from pearl_verl.eval.rm import pairs_from_results, parse_margins
    from pearl_verl.eval.runner import read_tutor_results

    tutors = (args.pair_tutors or "").split(",")
    if len(tutors) != 2 or not all(tutors) or args.pairs_out is None:
        raise InputError("--make-pairs needs --pair-tutors TUTOR_A,TUTOR_B and --pairs-out FILE.")
    margins = parse_margins(args.margins)
    pairs = pairs_from_results(list(read_tutor_results(args.make_pairs).values()), tutors[0], tutors[1], margins)
    write_whole(args.pairs_out, (json_line(stamped("preference_pair", pair.to_dict()), ensure_ascii=False)
                                 for pair in pairs))
    counts = {m: sum(p.margin == m for p in pairs) for m in ("low", "medium", "high")}
    print(f"{args.pairs_out}: {len(pairs)} pairs ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    return 0


def build_scorer(args: argparse.Namespace):
    from pearl_verl.eval.rm import JudgeScorer, PairwiseScorer, ScalarScorer

    if args.rm == "judge":
        from pearl_verl.eval.common_cli import judge_config, judge_label
        from pearl_verl.judge.backends import JUDGE_BACKENDS
        from pearl_verl.judge.judge_config import build_judge

        label = judge_label(args) if JUDGE_BACKENDS[args.judge].label else (args.label or judge_label(args))
        return JudgeScorer(build_judge(judge_config(args)), label)
    if args.rm == "pairwise":
        if not args.rm_base_url or not args.rm_model:
            raise InputError("--rm pairwise needs --rm-base-url and --rm-model.")
        from pearl_verl.llm.client import OpenAIChatClient

        endpoint = endpoint_config(args, "rm-", max_concurrency=args.concurrency)
        return PairwiseScorer(OpenAIChatClient(endpoint), args.label or f"{args.rm_model} (pairwise)", args.seed)
    if not args.rm_path:
        raise InputError("--rm hf needs --rm-path (a local sequence-classification reward model directory).")
    from pearl_verl.eval.hf_backend import HFRewardModel

    prompt = MTB_STYLE_SYSTEM_PROMPT
    if args.rm_system_prompt:
        prompt = read_text(args.rm_system_prompt, "system prompt file")
    model = HFRewardModel(args.rm_path)
    return ScalarScorer(model, args.label or model.name, prompt)


def _evaluate(args: argparse.Namespace) -> int:
    import asyncio

    from pearl_verl.async_run import run_async
    from pearl_verl.eval.plots import grouped_bars
    from pearl_verl.eval.rm import MARGINS, agreement, agreement_markdown, read_pairs, verdict_row
    from pearl_verl.eval.runner import read_results
    from pearl_verl.jsonl import drop_cut_tail
    from pearl_verl.progress import progress_bar
    from pearl_verl.stats import Estimate

    pairs = read_pairs(args.pairs)
    scorer = build_scorer(args)
    output = args.out / "rm_scores.jsonl"
    existing = read_results(output)
    labels = {r["reward_model"] for r in existing.values()}
    if labels and labels != {scorer.label}:
        raise InputError(f"{output} holds scores of {sorted(labels)}, not {scorer.label!r}; use another --out.")
    done = {k for k, r in existing.items() if r["ok"] or not args.retry_failed}
    todo = [p for p in pairs if p.id not in done]
    bar = progress_bar(args.progress, len(pairs), "pair", "eval-rm")
    if bar is not None:
        bar.update(len(pairs) - len(todo))
    args.out.mkdir(parents=True, exist_ok=True)
    drop_cut_tail(output)

    async def score_all() -> None:
        semaphore = asyncio.Semaphore(args.concurrency)
        with output.open("a", encoding="utf-8") as out:

            async def one(pair) -> None:
                async with semaphore:
                    verdict = await scorer.compare(pair)
                out.write(json_line(verdict_row(pair, verdict, scorer.label)))
                out.flush()
                if bar is not None:
                    bar.update(1)

            await asyncio.gather(*(one(p) for p in todo))

    run_async(score_all())
    if bar is not None:
        bar.close()
    ids = {p.id for p in pairs}
    rows = [r for k, r in read_results(output).items() if k in ids]
    result = agreement(rows)
    markdown = agreement_markdown(scorer.label, result)
    write_whole(args.out / "rm_report.md", markdown)
    write_whole(args.out / "rm_summary.json", json.dumps({"reward_model": scorer.label, **result}, indent=1))
    buckets = [m for m in MARGINS if result["by_margin"][m] is not None]
    if result["overall"] is not None:
        estimates = [Estimate(**result["by_margin"][m]).scaled(100) for m in buckets]
        grouped_bars(
            {scorer.label: [*estimates, Estimate(**result["overall"]).scaled(100)]},
            [f"{m} margin" for m in buckets] + ["overall"],
            "Agreement with pairwise preferences (95% Wilson CI)",
            "agreement (%)",
            args.out / "rm_agreement.png",
        )
    print(f"{output}: {len(todo)} pairs scored now, {len(pairs) - len(todo)} already done, {result['flagged']} flagged")
    print(markdown)
    plot = f", {args.out / 'rm_agreement.png'}" if result["overall"] is not None else " (no scored pair: no plot)"
    print(f"wrote {args.out / 'rm_report.md'}, {args.out / 'rm_summary.json'}{plot}")
    return 0 if result["flagged"] == 0 else 1
