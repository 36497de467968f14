"""``pearl-verl view PATH... -o view.html [--serve]``.

Flags are checked before any input is read (and ``--serve``'s port is taken then too), so a typo
costs a second rather than the minute a large training folder takes to read; nothing is written
when a flag is wrong.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

from pearl_verl.errors import InputError
from pearl_verl.listen import listening_socket
from pearl_verl.out_paths import output_file
from pearl_verl.ranges import PORT, POSITIVE
from pearl_verl.view.page import MAX_DIALOGUES

WARNED = 5
"""Skipped input rows named on stderr at most (the page names some too, and counts them all)."""


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
    parser.add_argument("-o", "--output", type=output_file, default="view.html", help="the page (default: view.html)")
    parser.add_argument("--title", help="the page's title (default: the paths)")
    parser.add_argument("--max-dialogues", type=POSITIVE.flag, default=MAX_DIALOGUES,
                        help="dialogues on the page; beyond this many, every flagged dialogue and a fixed random "
                        "sample of the rest")
    parser.add_argument("--serve", action="store_true", help="also serve the page on http://127.0.0.1 until Ctrl-C")
    parser.add_argument("--port", type=PORT.flag, default=0, help="port for --serve")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from pearl_verl.view.page import write_page
    from pearl_verl.view.records import read_dialogues

    server = bind(args.port) if args.serve else None
    try:
        reading = read_dialogues(args.paths)
        records = reading.records
        if not records:
            raise InputError(f"no dialogues in {[str(p) for p in args.paths]}.")
        title = args.title or "pearl-verl view: " + ", ".join(str(p) for p in args.paths)
        try:
            path = write_page(reading, args.output, title=title, max_dialogues=args.max_dialogues)
        except OSError as exc:
            raise InputError(f"-o {args.output}: cannot write the page ({exc.strerror or exc}).") from None
        flags = Counter(flag for rec in records for flag in rec["flags"])
        sources = ", ".join(f"{n} {s}" for s, n in Counter(r["source"] for r in records).items())
        flagged = ", ".join(f"{n} {f}" for f, n in flags.most_common()) or "none"
        skipped = f"; {len(reading.skipped)} input rows skipped (see above)" if reading.skipped else ""
        warn_skipped(reading.skipped)
        print(f"{path}: {len(records)} dialogues ({sources}); flagged: {flagged}{skipped}; "
              f"{path.stat().st_size / 1e6:.1f} MB, opens from disk")
        if server is not None:
            serve(server, path)
    finally:
        if server is not None:
            server.server_close()
    return 0


def warn_skipped(skipped: list[str]) -> None:
    """The first :data:`WARNED` skipped rows on stderr, and how many more."""
    for line in skipped[:WARNED]:
        print(f"warning: skipped {line}", file=sys.stderr)
    if len(skipped) > WARNED:
        print(f"warning: ... and {len(skipped) - WARNED} more input rows skipped", file=sys.stderr)


def serve(server: Any, path: Path) -> None:
    """Serve ``path`` alone on ``server`` until interrupted."""
    server.load(path)
    print(f"serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def page_server(path: Path, port: int = 0) -> Any:
    """An HTTP server on 127.0.0.1 that answers ``/`` (and the file's own name) with ``path``, 404 otherwise."""
    server = bind(port)
    server.load(path)
    return server


def bind(port: int = 0) -> Any:
    """A page server (:func:`server_class`) listening on 127.0.0.1:``port`` (0: any free port), no page yet.

    Raises:
        InputError: naming ``--port`` when the port cannot be taken (in use, or privileged).
    """
    PORT.check("--port", port)
    sock = listening_socket("127.0.0.1", port)
    server = server_class()(sock.getsockname()[:2], bind_and_activate=False)
    server.socket.close()  # the unbound one socketserver made: ours is bound already
    server.socket, server.server_address = sock, sock.getsockname()[:2]
    server.server_activate()
    return server


@functools.cache
def server_class() -> type:
    """The page server's class, made on first use: http.server takes half a second to import, ``--help`` none."""
    import http.server
    from urllib.parse import quote

    class PageHandler(http.server.BaseHTTPRequestHandler):
        """GET and HEAD of ``/`` or ``/<page's name>``: the page's bytes from memory; any other path: 404.

        Nothing here looks at the file system, so no path (``/../x``, ``/%2e%2e/x``, ``//x``, ``\\x``)
        can name a file next to the page; and, with no ``do_POST`` and the like, any other method is
        answered 501 by BaseHTTPRequestHandler itself. A query string is ignored.
        """

        server_version = "pearl-verl-view"
        sys_version = ""

        def do_GET(self) -> None:
            self._answer(with_body=True)

        def do_HEAD(self) -> None:
            self._answer(with_body=False)

        def _answer(self, with_body: bool) -> None:
            hosts = self.headers.get_all("Host") or []  # none: an HTTP/1.0 client, not a browser
            if len(hosts) > 1 or any(host.lower() not in self.server.hosts() for host in hosts):
                self.send_error(403)
                return
            if self.path.split("?", 1)[0] not in self.server.paths:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.server.page)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if with_body:
                self.wfile.write(self.server.page)

        def log_message(self, *args: object) -> None:
            pass

    class PageServer(http.server.ThreadingHTTPServer):
        """Holds one page in memory (read once) and the request paths that name it."""

        daemon_threads = True
        page: bytes = b""
        paths: frozenset[str] = frozenset()

        def __init__(self, address: tuple[str, int], bind_and_activate: bool = True) -> None:
            super().__init__(address, PageHandler, bind_and_activate)

        def load(self, path: Path) -> None:
            self.page = path.read_bytes()
            self.paths = frozenset({"/", "/" + quote(path.name)})  # the name as a browser sends it

        def hosts(self) -> frozenset[str]:
            """Host headers a browser sends for this server: any other is a DNS-rebinding page reaching in."""
            port = self.server_address[1]
            return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})

    return PageServer
