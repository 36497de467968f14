"""``pearl-verl compare``: blind pairwise comparison of tutoring dialogues by teachers.

Examples::

    # pairs of PEARL against every other tutor of an eval-tutor run, margin buckets from its judge
    pearl-verl compare build-pairs runs/main --focal pearl --sample 300 --out study/pairs.jsonl

    # one access link per teacher (the database is created on first use)
    pearl-verl compare add-annotator teacher1 teacher2 --db-url sqlite:///study/compare.db

    # the web app on 127.0.0.1:8000; pairs are loaded (idempotently) on start
    pearl-verl compare serve --pairs study/pairs.jsonl --db-url sqlite:///study/compare.db

    # the paper's table, agreement, and a file eval-rm reads
    pearl-verl compare report --db-url sqlite:///study/compare.db --out study/report \\
        --export study/human_pairs.jsonl
    pearl-verl eval-rm study/human_pairs.jsonl --rm judge ... --out runs/rm-vs-teachers

See docs/compare.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from pearl_verl.children import STOP_SIGNALS
from pearl_verl.errors import InputError
from pearl_verl.listen import http_url, is_loopback, listening_socket
from pearl_verl.out_paths import output_dir, output_file
from pearl_verl.ranges import PORT, POSITIVE, SEED
from pearl_verl.row_kinds import stamped
from pearl_verl.write_whole import write_whole

DEFAULT_DB_URL = "sqlite:///compare.db"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "compare",
        help="blind pairwise comparison of tutoring dialogues by teachers (build pairs, web app, report)",
        description="Teachers compare two tutors' dialogues for the same problem and student condition, blind and "
        "in random A/B order, as win / tie / loss; the report gives the paper's Win/Tie/Loss/Preference table, "
        "inter-annotator agreement and a preference file for eval-rm.",
    )
    commands = parser.add_subparsers(dest="compare_command", metavar="<subcommand>", required=True)
    _register_build(commands)
    _register_annotators(commands)
    _register_serve(commands)
    _register_report(commands)


def _db_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db-url",
        default=DEFAULT_DB_URL,
        help=f"SQLAlchemy database URL (default {DEFAULT_DB_URL}; postgresql+psycopg://user@host/db for a shared "
        "server)",
    )


def _register_build(commands: argparse._SubParsersAction) -> None:
    build = commands.add_parser("build-pairs", help="pairs of two tutors' dialogues from eval-tutor runs")
    build.add_argument("runs", nargs="+", type=Path, help="eval-tutor output directories (or results.jsonl files)")
    build.add_argument("--out", type=output_file, required=True, help="pairs JSONL to write")
    build.add_argument("--focal", help="compare this tutor against every other (it is tutor a: Win counts for it)")
    build.add_argument("--pair", action="append", default=[], help="TUTOR_A,TUTOR_B to compare (repeat)")
    build.add_argument(
        "--margins", default="5,15", help="low/medium and medium/high judge score-gap edges on 0-100"
    )
    build.add_argument("--no-margins", action="store_true", help="leave margin buckets out even when scored")
    build.add_argument("--sample", type=POSITIVE.flag, help="keep a random sample of N pairs")
    build.add_argument("--seed", type=SEED.flag, default=0, help="draws the sample")
    build.set_defaults(handler=run_build)


def _register_annotators(commands: argparse._SubParsersAction) -> None:
    add = commands.add_parser("add-annotator", help="create annotators and print their access links")
    add.add_argument("names", nargs="+", help="annotator names (shown to themselves and in the report)")
    _db_flag(add)
    add.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the app is reached, for the links")
    add.add_argument("--reissue", action="store_true", help="new access codes for existing annotators")
    add.set_defaults(handler=run_add_annotator)


def _register_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="run the comparison web app")
    serve.add_argument("--pairs", type=Path, action="append", default=[], help="pairs JSONL to load (repeat)")
    _db_flag(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=PORT.flag, default=8000, help="port to listen on")
    serve.add_argument("--secure-cookies", action="store_true", help="mark the session cookie Secure (behind HTTPS)")
    serve.set_defaults(handler=run_serve)


def _register_report(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser("report", help="Win/Tie/Loss/Preference, agreement, and the eval-rm export")
    _db_flag(report)
    report.add_argument("--unit", choices=("vote", "majority"), default="vote", help="what one comparison is")
    report.add_argument("--focal", help="orient every table row from this tutor (default: each pair's tutor a)")
    report.add_argument("--out", type=output_dir, help="directory for compare_report.md, compare_summary.json, votes.jsonl")
    report.add_argument("--export", type=output_file, help="preference pairs JSONL for `pearl-verl eval-rm`")
    report.add_argument(
        "--export-unit", choices=("majority", "annotator"), default="majority", help="one line per pair or per vote"
    )
    report.set_defaults(handler=run_report)


def run_build(args: argparse.Namespace) -> int:
    from pearl_verl.compare.pairs import build_pairs, read_runs, tutor_pairs, write_pairs
    from pearl_verl.eval.rm import parse_margins

    rows, tutors = read_runs(args.runs)
    explicit = []
    for text in args.pair:
        names = text.split(",")
        if len(names) != 2 or not all(n.strip() for n in names):
            raise InputError(f"--pair {text!r} must be TUTOR_A,TUTOR_B.")
        explicit.append((names[0].strip(), names[1].strip()))
    if args.focal and explicit:
        raise InputError("give --focal or --pair, not both.")
    combos = tutor_pairs(tutors, args.focal, explicit)
    if not combos:
        raise InputError(f"the results hold one tutor ({tutors}); a comparison needs two.")
    edges = None if args.no_margins else parse_margins(args.margins)
    built = build_pairs(rows, combos, edges, args.sample, args.seed)
    if not built.pairs:
        raise InputError(f"no item has usable dialogues of both tutors of any of {combos}.")
    write_pairs(args.out, built.pairs)
    margins = {m: sum(p.margin == m for p in built.pairs) for m in ("low", "medium", "high", None)}
    print(
        f"{args.out}: {len(built.pairs)} pairs (of {built.candidates}; {built.missing} item x tutor-pair "
        f"combinations lacked a usable dialogue) | margins: low {margins['low']}, medium {margins['medium']}, "
        f"high {margins['high']}, none {margins[None]}"
    )
    return 0


def run_add_annotator(args: argparse.Namespace) -> int:
    from pearl_verl.compare.store import Store

    store = Store(args.db_url)
    base = args.base_url.rstrip("/")
    for name in args.names:
        token = store.add_annotator(name, reissue=args.reissue)
        print(f"{name}\t{base}/login?token={token}")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from pearl_verl.compare.app import create_app
    from pearl_verl.compare.pairs import read_pairs
    from pearl_verl.compare.store import Store

    store = Store(args.db_url)
    new = sum(store.load_pairs(read_pairs(path)) for path in args.pairs)
    total = len(store.pairs())
    if total == 0:
        raise InputError("the study holds no pairs; pass --pairs FILE (from `pearl-verl compare build-pairs`).")
    sock = listening_socket(args.host, args.port)  # before "serving ...": a taken port is one error line
    if not is_loopback(args.host):  # after the bind: a host refused above is served to no one
        print(
            f"warning: binding {args.host} makes the study reachable from other machines; serve it behind HTTPS "
            "(a reverse proxy) and pass --secure-cookies, or access codes travel in clear text.",
            file=sys.stderr,
        )
    print(
        f"serving {total} pairs ({new} new) to {len(store.annotators())} annotators on "
        f"{http_url(args.host, sock.getsockname()[1])} (Ctrl-C stops; votes are saved as they are cast)",
        flush=True,
    )
    server = _server_class()(uvicorn.Config(create_app(store, args.secure_cookies), log_level="warning"))
    server.run(sockets=[sock])
    return 0


def _server_class() -> type:
    """uvicorn's server, stopping gracefully on every stop signal of the command (:data:`STOP_SIGNALS`).

    uvicorn handles SIGINT and SIGTERM itself, then raises the signal again once it has shut down, so the command
    ends with its one "stopped by" line; SIGHUP or SIGQUIT would cut into its loop with a traceback. This class
    hands those to uvicorn's own handler too.
    """
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                extra = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS
                         if signal.getsignal(sig) != self.handle_exit}
                try:
                    yield
                finally:  # before uvicorn raises what it caught: the command's own handlers take it
                    for sig, handler in extra.items():
                        signal.signal(sig, handler)

    return Server


def run_report(args: argparse.Namespace) -> int:
    from pearl_verl.compare.store import Store
    from pearl_verl.compare.tables import build_report, export_rows

    store = Store(args.db_url)
    votes = store.votes()
    markdown, summary = build_report(votes, args.unit, args.focal)
    print(markdown)
    if args.out is not None:
        write_whole(args.out / "compare_report.md", markdown + "\n")
        write_whole(args.out / "compare_summary.json", json.dumps(summary, indent=1))
        write_whole(args.out / "votes.jsonl", (json.dumps(stamped("vote", vote.to_dict()), ensure_ascii=False) + "\n"
                                                    for vote in votes))
        print(
            f"wrote {args.out / 'compare_report.md'}, {args.out / 'compare_summary.json'}, {args.out / 'votes.jsonl'}"
        )
    if args.export is not None:
        rows, skipped = export_rows(votes, store.pairs(), args.export_unit)
        if not rows:
            raise InputError(
                f"no vote can be exported for eval-rm (left out: {dict(skipped)}); it needs decided votes on pairs "
                "with a margin bucket (build pairs from a judged eval-tutor run)."
            )
        write_whole(args.export, (json.dumps(stamped("preference_pair", row), ensure_ascii=False) + "\n"
                                  for row in rows))
        left_out = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) or "none"
        print(f"{args.export}: {len(rows)} preference pairs for eval-rm (left out: {left_out})")
    return 0
