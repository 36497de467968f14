"""``pearl-verl convert-rows PATH... -o OUT [--dry-run]``: rows written before rows carried their kind, with it.

No input is changed (as no command of the project changes its input): a file is written to
``OUT/<its name>``, a folder's row files to ``OUT/<their path inside it>``, so a converted run folder
is a folder ``pearl-verl view`` reads. A folder's other JSONL files (``metrics.jsonl``, verl's logs) are
named and not copied. Every file is checked before the first is written, so a row of no known format
writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pearl_verl.errors import InputError
from pearl_verl.out_paths import output_dir

if TYPE_CHECKING:
    from pearl_verl.view.convert_rows import Conversion


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "convert-rows",
        help="dialogue, judge and simulate rows written before rows carried their kind, converted (for view)",
        description="Every row of dialogues, judgements and simulated turns pearl_verl writes says what it is "
        "(row_kind, row_version). This converts files written before that: train-local folders, eval-tutor and "
        "gen-sft runs, judge input and output, simulate output, pearl_sync rollout dumps. Inputs are not changed.",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="files, or folders whose *.jsonl row files are converted")
    parser.add_argument("-o", "--out", type=output_dir, required=True,
                        help="folder for the converted files (a folder's files keep their paths inside it)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be converted; write nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pearl_verl.jsonl import json_line
    from pearl_verl.view.convert_rows import convert_rows
    from pearl_verl.write_whole import write_whole

    out = args.out.resolve()
    planned: dict[Path, tuple[Path, list[dict[str, Any]], Conversion]] = {}
    for path in args.paths:
        if not path.exists():
            raise InputError(f"{path} does not exist.")
        base = path.resolve() if path.is_dir() else path.resolve().parent
        if out == base or (path.is_dir() and base in out.parents):
            raise InputError(f"-o {args.out} is {'inside ' if out != base else ''}the folder of the input {path}: "
                             "the converted files would replace or join what is read; write elsewhere.")
        files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        for file in files:
            target = out / file.resolve().relative_to(base)
            try:
                rows, report = convert_rows(file)
            except InputError as exc:
                if not path.is_dir():
                    raise
                print(f"{file}: not copied, not a file of rows this converts ({exc})")
                continue
            if target in planned:
                raise InputError(f"{file} and {planned[target][0]} would both be written to {target}: convert them "
                                 "in two runs.")
            planned[target] = (file, rows, report)
    for target, (file, rows, report) in planned.items():
        if not args.dry_run:
            write_whole(target, (json_line(row, ensure_ascii=False) for row in rows))
        print(_line(file, target, report, args.dry_run))
        for error in report.unreadable:
            print(f"  left out: {error}")
    converted = sum(report.converted > 0 for _, _, report in planned.values())
    print(f"convert-rows: {len(planned)} files of rows, {converted} with rows that had no kind; "
          + ("nothing written (--dry-run)" if args.dry_run else f"written under {args.out}"))
    return 0


def _line(file: Path, target: Path, report: Conversion, dry_run: bool) -> str:
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(report.kinds.items()))
    arrow = "would be" if dry_run else "->"
    if not report.changed:
        return f"{file} {arrow} {target}: {report.rows_in} rows, already current ({kinds})"
    return f"{file} {arrow} {target}: {report.rows_in} rows ({report.converted} without a kind) as {kinds}"
