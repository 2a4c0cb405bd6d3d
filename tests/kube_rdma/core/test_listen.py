"""The servers' own listening socket: any free port on `--port 0`, SO_REUSEADDR set, and a
taken port refused with the errno the CLI explains."""

from __future__ import annotations

import errno
import socket

import pytest

from kube_rdma.core.listen import bound_port, listening_socket


def test_port_0_is_any_free_port_with_reuseaddr() -> None:
    with listening_socket("127.0.0.1", 0) as sock:
        port = bound_port(sock)
        assert port > 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # it listens


def test_a_taken_port_is_refused_as_in_use() -> None:
    with (
        listening_socket("127.0.0.1", 0) as first,
        pytest.raises(OSError, match="in use") as raised,
    ):
        listening_socket("127.0.0.1", bound_port(first))
    assert raised.value.errno == errno.EADDRINUSE
