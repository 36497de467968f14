"""``pearl-verl decompose PROBLEMS... --cache-dir DIR``: decompose a dataset ahead of training.

Fills a decomposition cache (format in :mod:`pearl_verl.knowledge.cache`) that training workers
then read through ``pearl.student.cache_dir``, so every worker and every group member sees the
same units. With ``--base-url/--model`` the LLM extractor is used (cached under its model name);
without, the rule extractor. Already cached problems are skipped.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from pearl_verl.data.problem_files import add_problem_file_args
from pearl_verl.errors import InputError
from pearl_verl.llm.chat_types import UsageMeter
from pearl_verl.llm.cli_flags import add_endpoint_flags, endpoint_config
from pearl_verl.out_paths import output_dir_text
from pearl_verl.redact import redact


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("decompose", help="decompose problems into knowledge units and fill the cache")
    add_problem_file_args(parser)
    parser.add_argument("--cache-dir", type=output_dir_text, required=True, help="decomposition cache directory")
    parser.add_argument("--curriculum", help="custom curriculum JSON (default: the shipped one)")
    add_endpoint_flags(
        parser,
        role="extraction",
        defaults={"max_concurrency": 16},
        helps={"base-url": "extraction endpoint (omit for the rule extractor)", "concurrency": "extractions in flight"},
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from tqdm import tqdm

    from pearl_verl.async_run import run_async
    from pearl_verl.data.problem_files import load_problem_files
    from pearl_verl.knowledge.cache import DecompositionCache
    from pearl_verl.knowledge.curriculum import load_curriculum
    from pearl_verl.knowledge.decompose_once import Decomposer

    if bool(args.base_url) != bool(args.model):
        raise InputError("--base-url and --model go together (both for the LLM extractor, neither for the rules).")
    curriculum = load_curriculum(args.curriculum)
    backend = None
    endpoint = endpoint_config(args)
    if endpoint is not None:
        from pearl_verl.llm import OpenAIChatClient

        backend = OpenAIChatClient(endpoint)
    decomposer = Decomposer(curriculum, backend, args.model, DecompositionCache(args.cache_dir))
    problems = [item.problem for item in load_problem_files(args.problems, args.limit)]
    units: Counter[str] = Counter()

    async def main() -> None:
        semaphore = asyncio.Semaphore(args.concurrency)
        progress = tqdm(total=len(problems), desc="decompose", unit="problem")

        async def one(problem) -> None:
            async with semaphore:
                decomposition, _ = await decomposer.decompose(problem)
                units.update(decomposition.units)
                progress.update()

        await asyncio.gather(*(one(p) for p in problems))
        progress.close()

    run_async(main())
    stats = decomposer.stats
    print(
        f"problems {len(problems)} | cached before {stats['disk_hits']} | rules {stats['rules']} | "
        f"llm {stats['llm']} | fallbacks {stats['fallbacks']} | llm calls {stats['llm_calls']} | cache {args.cache_dir}"
    )
    print("most frequent units: " + ", ".join(f"{u} {n}" for u, n in units.most_common(10)))
    note = UsageMeter.note_of(backend)
    if note:  # the mode auto found, and what the server refused on the way (its status and message)
        print(redact(note))
    failure = all_fell_back(stats, len(problems), args.model, args.base_url) if backend is not None else None
    if failure is not None:
        print(redact(failure), file=sys.stderr)
        return 1
    return 0


def all_fell_back(stats: dict, problems: int, model: str, base_url: str) -> str | None:
    """The error line when the extraction model was asked and nothing it wrote was usable, else None.

    Fallbacks are not cached, so a rerun (with a better model or structured output) tries again.
    """
    if not stats["fallbacks"] or stats["llm"]:
        return None
    return (f"error: every extraction fell back to the rules ({stats['fallbacks']} of {problems} problems): "
            f"{model} at {base_url} gave no valid knowledge units; nothing was cached")
