"""pods/NAME/portforward: the apiserver's websocket port-forward, relayed to a local TCP port that
stands for the pod's.

The fake runs no pods, so a test says where a pod's port is: `PortForwards.add(namespace, pod,
port, local_port)` (`FakeApiServer.port_forwards`), e.g. the port a real extender process listens
on. A GET for an existing pod with one `ports` value that upgrades to a websocket (subprotocol
v4.channel.k8s.io) then speaks the kubelet's protocol: every binary message starts with its
channel byte, 0 for data and 1 for the port's errors, and the first message on each channel is
the port number (2 bytes, little endian). What comes on channel 0 goes to the local port, what
the local port answers comes back on channel 0, and the websocket closes when the local side
does. A port that nothing stands for, or whose local port refuses the connection, gets the
kubelet's error text on channel 1 and the close. A pod that does not exist answers 404 before
the upgrade, like any object. One port per request: kube-rdma asks for one per websocket.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from aiohttp import WSMsgType, web

from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.store import Store

PROTOCOL = "v4.channel.k8s.io"
DATA, ERROR = 0, 1


class PortForwards:
    """Which local port stands for each pod's port."""

    def __init__(self) -> None:
        self._ports: dict[tuple[str, str, int], int] = {}

    def add(self, namespace: str, pod: str, port: int, local_port: int) -> None:
        self._ports[(namespace, pod, port)] = local_port

    def get(self, namespace: str, pod: str, port: int) -> int | None:
        return self._ports.get((namespace, pod, port))


PORT_FORWARDS: Final = web.AppKey("port_forwards", PortForwards)


async def serve_port_forward(
    request: web.Request, store: Store, namespace: str | None, pod: str
) -> web.StreamResponse:
    if request.method != "GET" or namespace is None:
        raise ApiError(
            405, f"fake apiserver: {request.method} is not supported on pods/portforward"
        )
    store.get("pods", pod, namespace)  # 404 for a pod that does not exist
    ports = request.query.getall("ports", [])
    if len(ports) != 1 or not ports[0].isdigit():
        raise ApiError(400, "fake apiserver: give one port: ?ports=PORT")
    port = int(ports[0])
    ws = web.WebSocketResponse(protocols=(PROTOCOL,))
    if not ws.can_prepare(request).ok:
        raise ApiError(400, "pods/portforward needs an upgrade to a websocket")
    await ws.prepare(request)
    for channel in (DATA, ERROR):
        await ws.send_bytes(bytes([channel]) + port.to_bytes(2, "little"))
    local = request.app[PORT_FORWARDS].get(namespace, pod, port)
    try:
        if local is None:
            raise ConnectionRefusedError("connection refused")
        reader, writer = await asyncio.open_connection("127.0.0.1", local)
    except OSError as e:
        error = (
            f"error forwarding port {port} to pod {namespace}/{pod}: failed to connect to "
            f"localhost:{port} inside the pod: {e.strerror or e}"
        )
        await ws.send_bytes(bytes([ERROR]) + error.encode())
        await ws.close()
        return ws
    answer = asyncio.create_task(_answer(reader, ws))
    try:
        async for message in ws:
            if message.type == WSMsgType.BINARY and message.data[:1] == bytes([DATA]):
                writer.write(message.data[1:])
                await writer.drain()
    finally:
        answer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await answer
        writer.close()
    return ws


async def _answer(reader: asyncio.StreamReader, ws: web.WebSocketResponse) -> None:
    """What the local port answers, back on the data channel; its close closes the websocket."""
    while chunk := await reader.read(64 * 1024):
        await ws.send_bytes(bytes([DATA]) + chunk)
    await ws.close()
