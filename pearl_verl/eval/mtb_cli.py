"""``pearl-verl eval-mtb``: MathTutorBench's nine tasks from local files (no hub).

Examples::

    # from a clone: the data folder (data/) is found on its own
    pearl-verl eval-mtb --model-base-url http://host:8000/v1 --model pearl-30b --out runs/mtb-pearl
    # with the pedagogical reward model (a local directory) for the pedagogy win rates; --data-dir (or
    # PEARL_VERL_DATA_DIR) names a copy of the repository's data/ folder when not run from a clone
    pearl-verl eval-mtb --data-dir data --model-hf /models/tutor --ped-rm-path /models/ped-rm \\
        --tasks scaffolding_generation,pedagogy_following --limit 200 --out runs/mtb-small

Writes ``mtb_generations.jsonl`` (one line per example, incremental, resumable), ``mtb_report.md``
and ``mtb_summary.json``. The pedagogy tasks report the question-match rate always and the win rate
only with ``--ped-rm-path``; the two are named and tabulated apart.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.eval.common_cli import add_progress_flag
from pearl_verl.jsonl import json_line, read_text
from pearl_verl.llm.cli_flags import add_endpoint_flags, endpoint_config
from pearl_verl.out_paths import output_dir
from pearl_verl.ranges import POSITIVE, Range
from pearl_verl.row_kinds import stamped
from pearl_verl.write_whole import write_whole


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-mtb",
        help="MathTutorBench's nine tasks from local files, with its metrics",
        description="Run a model (endpoint or local HF directory) on MathTutorBench's tasks from local data files "
        "and report its metrics; pedagogy tasks report the question-match rate and, with a pedagogical reward "
        "model, the win rate, labelled apart.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="folder with gsm8k/, stepverify/, mathtutorbench/ (default: $PEARL_VERL_DATA_DIR, else a clone's data/)",
    )
    # --model, not --model-model, names the served model; requests in flight are --concurrency
    add_endpoint_flags(parser, "model-", role="model", flags=("base-url", "api-key-env", "timeout", "max-retries"))
    parser.add_argument("--model", help="model name as served (with --model-base-url)")
    parser.add_argument("--model-hf", help="a local Hugging Face model directory instead of an endpoint")
    parser.add_argument("--tasks", help="comma-separated subset (default: all nine)")
    parser.add_argument("--limit", type=POSITIVE.flag, help="first N source rows per task")
    parser.add_argument("--temperature", type=Range(float, low=0, high=10).flag, default=0.0,
                        help="sampling temperature of the model under test")
    parser.add_argument("--max-tokens", type=POSITIVE.flag, default=2048,
                        help="cap on one generation's tokens")
    parser.add_argument("--ped-rm-path", help="pedagogical reward model directory (sequence classification)")
    parser.add_argument("--ped-rm-system-prompt", type=Path, help="file with the reward model's system prompt")
    parser.add_argument("--out", type=output_dir, required=True, help="output directory (resumed when it exists)")
    parser.add_argument("--concurrency", type=POSITIVE.flag, default=16, help="requests in flight")
    parser.add_argument("--retry-failed", action="store_true", help="generate flagged examples again")
    add_progress_flag(parser)
    parser.set_defaults(handler=run)


def _backend(args: argparse.Namespace) -> tuple[Any, str]:
    from pearl_verl.llm.chat_types import SamplingConfig

    sampling = SamplingConfig(temperature=args.temperature, max_tokens=args.max_tokens)
    if bool(args.model_hf) == bool(args.model_base_url):
        raise InputError("give the model under test as --model-base-url URL --model NAME, or as --model-hf PATH.")
    if args.model_hf:
        from pearl_verl.eval.hf_backend import HFChatBackend

        backend = HFChatBackend(args.model_hf, sampling)
        return backend, backend.name
    if not args.model:
        raise InputError("--model-base-url needs --model (the served model name).")
    from pearl_verl.llm.client import OpenAIChatClient

    endpoint = endpoint_config(args, "model-", model=args.model, max_concurrency=args.concurrency)
    return OpenAIChatClient(endpoint, sampling), args.model


def run(args: argparse.Namespace) -> int:
    from pearl_verl.async_run import run_async
    from pearl_verl.data.location import data_dir
    from pearl_verl.eval.mtb import PEDAGOGY_TASKS, TASKS, build_examples, mtb_markdown, task_metrics
    from pearl_verl.eval.rm_cli import MTB_STYLE_SYSTEM_PROMPT
    from pearl_verl.eval.runner import read_results
    from pearl_verl.jsonl import drop_cut_tail
    from pearl_verl.progress import progress_bar

    tasks = [t.strip() for t in args.tasks.split(",")] if args.tasks else list(TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise InputError(f"unknown task(s) {unknown}; tasks: {list(TASKS)}.")
    examples = [e for t in tasks for e in build_examples(t, data_dir(args.data_dir), args.limit)]
    backend, model_name = _backend(args)
    rm = None
    if args.ped_rm_path:
        from pearl_verl.eval.hf_backend import HFRewardModel

        rm = HFRewardModel(args.ped_rm_path)
    prompt = MTB_STYLE_SYSTEM_PROMPT
    if args.ped_rm_system_prompt:
        prompt = read_text(args.ped_rm_system_prompt, "system prompt file")
    output = args.out / "mtb_generations.jsonl"
    existing = read_results(output)
    todo = [
        e
        for e in examples
        if _needs_work(existing.get(e.id), e.task in PEDAGOGY_TASKS and rm is not None, args.retry_failed)
    ]
    bar = progress_bar(args.progress, len(examples), "example", "eval-mtb")
    if bar is not None:
        bar.update(len(examples) - len(todo))
    args.out.mkdir(parents=True, exist_ok=True)
    drop_cut_tail(output)
    run_async(_generate(todo, existing, backend, rm, prompt, output, args.concurrency, bar))
    if bar is not None:
        bar.close()
    rows = read_results(output)
    metrics = {t: task_metrics(t, [rows[e.id] for e in examples if e.task == t and e.id in rows]) for t in tasks}
    rm_label = rm.name if rm is not None else None
    markdown = mtb_markdown(model_name, metrics, rm_label)
    write_whole(args.out / "mtb_report.md", markdown)
    summary = {"model": model_name, "pedagogical_reward_model": rm_label, "tasks": metrics}
    write_whole(args.out / "mtb_summary.json", json.dumps(summary, indent=1))
    flagged = sum(m["flagged"] for m in metrics.values())
    print(f"{output}: {len(todo)} examples run now, {len(examples) - len(todo)} already done, {flagged} flagged")
    print(markdown)
    print(f"wrote {args.out / 'mtb_report.md'}, {args.out / 'mtb_summary.json'}")
    return 0 if flagged == 0 else 1


def _needs_work(row: dict[str, Any] | None, wants_rm: bool, retry_failed: bool) -> bool:
    if row is None:
        return True
    if not row["ok"]:
        return retry_failed
    return wants_rm and row.get("win") is None


async def _generate(todo, existing, backend, rm, prompt, output: Path, concurrency: int, bar) -> None:
    import asyncio

    from pearl_verl.eval.mtb import PEDAGOGY_TASKS, STOPS, message_for, rm_conversation
    from pearl_verl.llm.chat_types import LLMCallError

    semaphore = asyncio.Semaphore(concurrency)
    sampling = backend.sampling
    with output.open("a", encoding="utf-8") as out:

        async def one(example) -> None:
            previous = existing.get(example.id)
            row = stamped("mtb_generation", {
                "id": example.id,
                "task": example.task,
                "index": example.index,
                "target": example.target,
                "response": None,
                "ok": False,
                "error": None,
                "win": None,
                "rm_scores": None,
            })
            async with semaphore:
                if previous is not None and previous["ok"]:
                    row.update(response=previous["response"], ok=True)
                else:
                    try:
                        result = await backend.chat(message_for(example), _with_stop(sampling, STOPS[example.task]))
                        row.update(response=_cut(result.text, STOPS[example.task]), ok=True)
                    except LLMCallError as exc:
                        row["error"] = f"model call failed: {exc}"
                if row["ok"] and rm is not None and example.task in PEDAGOGY_TASKS:
                    generated = await rm.score(rm_conversation(example.context, row["response"], prompt))
                    human = await rm.score(rm_conversation(example.context, example.target, prompt))
                    row.update(win=generated > human, rm_scores=[generated, human])
            out.write(json_line(row, ensure_ascii=False))
            out.flush()
            if bar is not None:
                bar.update(1)

        await asyncio.gather(*(one(e) for e in todo))


def _with_stop(sampling, stops: tuple[str, ...]):
    from dataclasses import replace

    return replace(sampling, stop=stops[:4])


def _cut(text: str, stops: tuple[str, ...]) -> str:
    """The response up to the first stop string (servers that ignore ``stop`` are cut here)."""
    text = text.strip()
    for stop in stops:
        index = text.find(stop)
        if index >= 0:
            text = text[:index]
    return text.strip()
