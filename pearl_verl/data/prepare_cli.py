"""``pearl-verl prepare-data SOURCE... -o DIR``: problem sources into verl parquet for RL (and gen-sft).

Writes ``DIR/train.parquet``, ``DIR/val.parquet`` (when validation has rows) and
``DIR/prepare_summary.json``; the row contract, split, dedup and condition rules are in
:mod:`pearl_verl.data.prepare` and docs/data.md. Examples::

    pearl-verl prepare-data gsm8k=@fixture math=@fixture mathdial=@fixture -o prepared/pearl
    # from a clone; data/ holds GSM8K's train and test splits (add your own MATH / MathDial training files)
    pearl-verl prepare-data gsm8k=data/gsm8k/train.jsonl gsm8k:val=data/gsm8k/test.jsonl \\
        -o prepared/pearl --conditions-per-problem 2 --cache-dir prepared/knowledge \\
        --extract-base-url http://host:8000/v1 --extract-model student
    pearl-verl prepare-data math=hf:HuggingFaceH4/MATH-500@test -o prepared/math500 --val-fraction 0

Exit status: 0 on success; 2 for a malformed row (located by file, line and field) unless
``--skip-errors``, which skips such rows and reports how many.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from pearl_verl.config_flags import add_config_flags, config_values
from pearl_verl.data.prepare import PrepareConfig
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS
from pearl_verl.errors import InputError
from pearl_verl.llm.cli_flags import add_endpoint_flags, endpoint_config
from pearl_verl.out_paths import output_dir
from pearl_verl.ranges import SHARE
from pearl_verl.redact import redact
from pearl_verl.write_whole import write_whole

if TYPE_CHECKING:
    from pearl_verl.data.prepare import SourceSpec
    from pearl_verl.llm.chat_types import EndpointConfig

SUMMARY_NAME = "prepare_summary.json"
_CONFIG_FIELDS = ("val_fraction", "conditions_per_problem", "seed", "limit", "skip_errors", "drop_unparsed_answers")
"""The :class:`PrepareConfig` settings taken as flags (the sampler and dedup have flags of their own shape)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "prepare-data",
        help="GSM8K / MATH / MathDial -> verl parquet rows for the pearl_tutor agent loop",
        description="Convert problem sources into verl parquet (train/val) with a sampled student condition per row.",
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="KIND[:SPLIT]=PATH",
        help="KIND: gsm8k | math | mathdial; SPLIT: train | val | auto (default auto: hash split by question); "
        "PATH: .jsonl/.json/.parquet file (relative to the working directory or to the data folder, e.g. "
        "gsm8k/test.jsonl), hf:<dataset>[:<config>]@<split>, or @fixture (the shipped sample)",
    )
    parser.add_argument("-o", "--out-dir", type=output_dir, required=True, help="output folder")
    add_config_flags(parser, PrepareConfig, ("val_fraction", "conditions_per_problem"))
    parser.add_argument(
        "--ability-mix",
        default="low=1,medium=1,high=1",
        help="relative weights of the student ability levels, e.g. low=2,medium=1,high=1 (normalised)",
    )
    parser.add_argument(
        "--misconception-rate", type=SHARE.flag, default=1.0, help="chance a row starts from the source's misconception"
    )
    add_config_flags(parser, PrepareConfig, ("seed", "limit", "skip_errors"))
    parser.add_argument("--keep-duplicates", action="store_true", help="keep repeated questions and train/val overlaps")
    add_config_flags(parser, PrepareConfig, ("drop_unparsed_answers",))
    knowledge = parser.add_argument_group("knowledge cache (filled ahead of training when --cache-dir is given)")
    knowledge.add_argument("--cache-dir", type=output_dir, help="decomposition cache folder (pearl.student.cache_dir)")
    add_endpoint_flags(
        knowledge,
        "extract-",
        role="extraction",
        defaults={"max_concurrency": 16},
        helps={
            "base-url": "extraction endpoint (omit for the rule extractor)",
            "model": "extraction model name as served (= pearl.student.model)",
            "concurrency": "extractions in flight",
        },
    )
    knowledge.add_argument("--curriculum", help="custom curriculum JSON (default: the shipped one)")
    parser.set_defaults(handler=run)


def parse_ability_mix(text: str) -> dict[str, float]:
    """``low=1,medium=1,high=2`` as normalised probabilities.

    Raises:
        InputError: for an unknown level, a bad number, or weights that do not sum above 0.
    """
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        level, sep, value = part.partition("=")
        if not sep or level.strip() not in ABILITY_LEVELS:
            raise InputError(f"--ability-mix part {part!r} must be LEVEL=WEIGHT with LEVEL in {list(ABILITY_LEVELS)}.")
        try:
            weights[level.strip()] = float(value)
        except ValueError:
            raise InputError(f"--ability-mix weight {value!r} of {level!r} is not a number.") from None
    total = sum(weights.values())
    if not weights or total <= 0 or min(weights.values()) < 0:
        raise InputError(f"--ability-mix {text!r} needs non-negative weights with a positive sum, e.g. low=1,high=1.")
    return {level: weight / total for level, weight in weights.items()}


def _resolved(spec: SourceSpec) -> SourceSpec:
    """The spec with a plain file path looked up in the data folder when it is not found as given."""
    from pearl_verl.data.location import dataset_file
    from pearl_verl.data.sources import FIXTURE_ALIAS, HF_PREFIX

    if spec.location == FIXTURE_ALIAS or spec.location.startswith(HF_PREFIX):
        return spec
    return replace(spec, location=str(dataset_file(spec.location)))


def run(args: argparse.Namespace) -> int:
    from pearl_verl.data.conditions import ConditionSampler
    from pearl_verl.data.prepare import SPLITS, SourceSpec, build_rows, problems_of, write_rows

    if bool(args.extract_base_url) != bool(args.extract_model):
        raise InputError("--extract-base-url and --extract-model go together (both for the LLM extractor).")
    if args.extract_base_url and args.cache_dir is None:
        raise InputError("--extract-base-url needs --cache-dir: the decompositions are written there.")
    endpoint = endpoint_config(args, "extract-")  # a bad value fails here, before any row is written
    config = PrepareConfig(
        sampler=ConditionSampler(parse_ability_mix(args.ability_mix), args.misconception_rate),
        **config_values(args, _CONFIG_FIELDS),
        dedup=not args.keep_duplicates,
    )
    rows, report = build_rows([_resolved(SourceSpec.parse(s)) for s in args.sources], config)
    if not any(rows.values()):
        raise InputError("no rows left to write: every source was empty, skipped or dropped.")
    written = [write_rows(rows[split], args.out_dir / f"{split}.parquet") for split in SPLITS if rows[split]]
    if args.cache_dir is not None:
        report.knowledge = _fill(args, problems_of(rows), endpoint)
    write_whole(args.out_dir / SUMMARY_NAME, json.dumps(report.to_dict(), indent=1))
    for line in report.lines():
        print(line)
    if report.knowledge is not None:
        k = report.knowledge
        print(
            f"knowledge cache {k['cache_dir']} ({k['extractor']}): {k['problems']} problems | cached before "
            f"{k['disk_hits']} | rules {k['rules']} | llm {k['llm']} | fallbacks {k['fallbacks']} | "
            f"llm calls {k['llm_calls']}"
        )
        if k.get("structured_output"):  # the mode auto found, and what the server refused on the way
            print(redact(k["structured_output"]))
    print("wrote " + ", ".join(str(p) for p in written) + f", {args.out_dir / SUMMARY_NAME}")
    if report.knowledge is not None and endpoint is not None:
        from pearl_verl.knowledge.decompose_cli import all_fell_back

        failure = all_fell_back(report.knowledge, report.knowledge["problems"], endpoint.model, endpoint.base_url)
        if failure is not None:  # the rows are written; the cache has none of the model's units
            print(redact(failure), file=sys.stderr)
            return 1
    return 0


def _fill(args: argparse.Namespace, problems: list, endpoint: EndpointConfig | None) -> dict:
    from pearl_verl.data.knowledge_fill import fill_cache

    progress = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(total=len(problems), desc="decompose", unit="problem", file=sys.stderr)
    try:
        return fill_cache(
            problems,
            args.cache_dir,
            endpoint,
            args.extract_concurrency,
            args.curriculum,
            on_done=progress.update if progress is not None else None,
        )
    finally:
        if progress is not None:
            progress.close()
