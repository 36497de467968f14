"""``pearl-verl eval-mathdial``: MathDial success@k / telling@k for tutors and the dataset's human teachers.

Run the tutors against the MathDial-style student on MathDial's test split first (eval-tutor, no
judge needed), then compute the metrics::

    pearl-verl eval-tutor data/mathdial/test.jsonl --simulator mathdial --judge none \\
        --student-base-url http://s:8000/v1 --student-model student \\
        --tutor name=pearl,base_url=http://t:8000/v1,model=pearl-30b --out runs/mathdial
    pearl-verl eval-mathdial --results runs/mathdial/results.jsonl \\
        --human data/mathdial/test.jsonl --out runs/mathdial

Writes ``mathdial_report.md``, ``mathdial_summary.json`` and ``mathdial_curves.png``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pearl_verl.errors import InputError
from pearl_verl.out_paths import output_dir
from pearl_verl.ranges import POSITIVE
from pearl_verl.write_whole import write_whole


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval-mathdial",
        help="MathDial success@k / telling@k of eval-tutor dialogues and of the dataset's human teachers",
    )
    parser.add_argument("--results", type=Path, action="append", default=[], help="eval-tutor results.jsonl (repeat)")
    parser.add_argument(
        "--human", type=Path, help="MathDial JSONL (test split) for the human-teacher reference row, e.g. data/mathdial/test.jsonl",
    )
    parser.add_argument("--simulator", default="mathdial", help="use dialogues with this simulator")
    parser.add_argument("--max-k", type=POSITIVE.flag, default=7, help="largest k of success@k and telling@k")
    parser.add_argument("--out", type=output_dir, required=True, help="output directory")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.eval.mathdial import curves, episode_indices, human_indices, mathdial_markdown
    from pearl_verl.eval.plots import line_with_ci
    from pearl_verl.eval.runner import episodes_of, read_tutor_results
    from pearl_verl.judge.reward_info import FAILED_EPISODE_REASONS

    if not args.results and args.human is None:
        raise InputError("give --results (eval-tutor dialogues) and/or --human (the MathDial test file).")
    table = {}
    if args.human is not None:
        from pearl_verl.data.location import dataset_file
        from pearl_verl.jsonl import read_objects

        found = [human_indices(row) for _, row in read_objects(dataset_file(args.human), "MathDial file")]
        table["Human teachers (MathDial data)"] = curves([i for i in found if i is not None], args.max_k)
    for path in args.results:
        by_tutor: dict[str, list] = {}
        for row, episode in episodes_of(read_tutor_results(path)):
            if row.get("simulator") == args.simulator and episode.end_reason not in FAILED_EPISODE_REASONS:
                by_tutor.setdefault(str(row["tutor"]), []).append(episode_indices(episode))
        if not by_tutor:
            raise InputError(f"{path} has no usable dialogue with simulator {args.simulator!r}.")
        table.update({name: curves(found, args.max_k) for name, found in by_tutor.items()})
    markdown = mathdial_markdown(table, args.max_k)
    args.out.mkdir(parents=True, exist_ok=True)
    write_whole(args.out / "mathdial_report.md", markdown)
    summary = {name: {m: [e.to_dict() for e in es] for m, es in data.items()} for name, data in table.items()}
    write_whole(args.out / "mathdial_summary.json", json.dumps({"max_k": args.max_k, "tutors": summary}, indent=1))
    series = {}
    for name, data in table.items():
        series[f"{name} success"] = [e.scaled(100) for e in data["success"]]
        series[f"{name} telling"] = [e.scaled(100) for e in data["telling"]]
    line_with_ci(
        series,
        list(range(1, args.max_k + 1)),
        "MathDial success@k and telling@k",
        "k (rounds)",
        "dialogues (%)",
        args.out / "mathdial_curves.png",
    )
    print(markdown)
    print(
        f"wrote {args.out / 'mathdial_report.md'}, {args.out / 'mathdial_summary.json'}, {args.out / 'mathdial_curves.png'}"
    )
    return 0
