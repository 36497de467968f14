"""How a server command takes its port: bound before any work is done, or one error line naming the flag.

``view --serve`` and ``compare serve`` both bind here first, so a taken port, a privileged one or a
host that is no address ends the command before it reads a file or prints "serving".
"""

from __future__ import annotations

import socket

from pearl_verl.errors import InputError
from pearl_verl.ranges import shown


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port), for uvicorn to serve on.

    Raises:
        InputError: naming ``--host`` for a name that is no address here (``nan``, ``\u202e``), or
            ``--port`` for a port that is taken or not this user's to take.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError; idna refuses some names
        raise InputError(f"--host {shown(host)} is no address to listen on ({getattr(exc, 'strerror', None) or exc})."
                         ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart takes its port back
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(f"--port {port}: cannot listen on {shown(host)}:{port} ({exc.strerror or exc}); another "
                         "server may hold it: stop it or pick another --port.") from None
    return sock
