"""``pearl-verl view PATH... -o view.html [--serve]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from pearl_verl.view.page import MAX_DIALOGUES


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "view",
        help="one self-contained HTML page to read dialogues: training steps, held-out evaluations, judge output",
        description="Reads train-local folders (dialogues/ and heldout.jsonl), eval-tutor runs, pearl-verl judge "
        "output with the dialogues it judged, simulate output and verl rollout dumps, and writes one HTML file that "
        "opens from disk: filters, each dialogue with its student states, judgement, rewards and advantage, its "
        "GSPO group side by side, the same held-out problem early and late, and flags for what to read first.",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="folders or JSONL files (any mix)")
    parser.add_argument("-o", "--output", type=Path, default=Path("view.html"), help="the page (default: view.html)")
    parser.add_argument("--title", help="the page's title (default: the paths)")
    parser.add_argument("--max-dialogues", type=int, default=MAX_DIALOGUES,
                        help="beyond this many, every flagged dialogue and a fixed random sample of the rest "
                        "(default %(default)s)")
    parser.add_argument("--serve", action="store_true", help="also serve the page on http://127.0.0.1 until Ctrl-C")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: any free one)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from pearl_verl.errors import InputError
    from pearl_verl.view.page import write_page
    from pearl_verl.view.records import read_sources

    if args.max_dialogues < 1:
        raise InputError(f"--max-dialogues {args.max_dialogues} must be >= 1.")
    records = read_sources(args.paths)
    if not records:
        raise InputError(f"no dialogues in {[str(p) for p in args.paths]}.")
    title = args.title or "pearl-verl view: " + ", ".join(str(p) for p in args.paths)
    path = write_page(records, args.output, title=title, max_dialogues=args.max_dialogues)
    flags = Counter(flag for rec in records for flag in rec["flags"])
    sources = ", ".join(f"{n} {s}" for s, n in Counter(r["source"] for r in records).items())
    flagged = ", ".join(f"{n} {f}" for f, n in flags.most_common()) or "none"
    print(f"{path}: {len(records)} dialogues ({sources}); flagged: {flagged}; "
          f"{path.stat().st_size / 1e6:.1f} MB, opens from disk")
    if args.serve:
        serve(path, args.port)
    return 0


def serve(path: Path, port: int = 0) -> None:
    """Serve ``path`` alone on 127.0.0.1 until interrupted."""
    with page_server(path, port) as server:
        print(f"serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def page_server(path: Path, port: int = 0):
    """An HTTP server on 127.0.0.1 that answers ``/`` (and the file's own name) with ``path``, 404 otherwise."""
    import functools
    import http.server

    class Page(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path not in ("/", f"/{path.name}"):
                self.send_error(404)
                return
            self.path = f"/{path.name}"
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Page, directory=str(path.parent.resolve()))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
