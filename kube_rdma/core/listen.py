"""The listening socket of a kube-rdma server, bound before its app starts.

Binding it here rather than inside aiohttp lets a server started with `--port 0` (any free
port) say in its "listening on" line which port it got: whoever started it reads the port
from that line instead of guessing a free one beforehand, which another process may take in
between.
"""

from __future__ import annotations

import socket


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on `host`:`port`, with SO_REUSEADDR as asyncio's servers set it
    on POSIX, so that a restart right after a stop is not refused for connections still in
    TIME_WAIT."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def bound_port(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port
