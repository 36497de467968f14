"""How a server command takes its port: bound before any work is done, or one error line naming the flag.

``view --serve`` and ``compare serve`` both bind here first, so a taken port, a privileged one or a
host that is no address ends the command before it reads a file or prints "serving".
"""

from __future__ import annotations

import ipaddress
import socket

from pearl_verl.errors import InputError
from pearl_verl.ranges import shown


def bare_host(host: str) -> str:
    """``host`` without the brackets of a URL's IPv6 literal (``[::1]`` -> ``::1``): both spellings are accepted."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def http_url(host: str, port: int) -> str:
    """The URL a browser opens for a server on ``host``:``port``; an IPv6 literal goes in brackets
    (``http://[::1]:8000/``: ``http://::1:8000/`` is no URL)."""
    name = bare_host(host)
    return f"http://[{name}]:{port}/" if ":" in name else f"http://{name}:{port}/"


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` resolves to is this machine's own (127.0.0.0/8, ::1): a name is judged by
    what it resolves to, not by how it is spelled. A name that does not resolve is not loopback."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(bare_host(host), None, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError):
        return False
    try:
        return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)
    except ValueError:
        return False


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port), for uvicorn to serve on.

    Raises:
        InputError: naming ``--host`` for a name that is no address here (``nan``, ``\u202e``), or
            ``--port`` for a port that is taken or not this user's to take.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(bare_host(host), port, type=socket.SOCK_STREAM,
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
