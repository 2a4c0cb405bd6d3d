"""A local port forwarded to a pod's port through the apiserver, as `kubectl port-forward` does.

`port_forward(namespace, pod, port)` listens on a free port of 127.0.0.1. Each connection made
to it opens one websocket to the pod's portforward subresource (GET
/api/v1/namespaces/NS/pods/NAME/portforward?ports=PORT, subprotocol v4.channel.k8s.io, through
kubernetes-asyncio's WsApiClient and the default configuration that kubeconfig.py loaded), and
bytes are relayed both ways until the pod's side closes. On that websocket each binary message
starts with its channel byte: channel 0 carries the data, channel 1 the kubelet's error for the
port (text, e.g. "error forwarding port 8888 to pod ...: connection refused"); the first message
on each channel carries the port number (2 bytes, little endian), not data. The caller needs
`create` on pods/portforward in the pod's namespace.

A connection that fails (the apiserver refused the upgrade, the kubelet could not connect in the
pod) is closed at once; why is kept in `Forward.errors`, so that the caller can say why its
request through the local port failed rather than "connection reset".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

DATA, ERROR = 0, 1
PROTOCOL = "v4.channel.k8s.io"
CHUNK = 64 * 1024


@dataclass
class Forward:
    """A port forward in place: where to connect, and what went wrong on its connections."""

    namespace: str
    pod: str
    port: int
    local_port: int = 0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pod}:{self.port}"


@contextlib.asynccontextmanager
async def port_forward(namespace: str, pod: str, port: int) -> AsyncIterator[Forward]:
    """Forward 127.0.0.1:`Forward.local_port` to `port` of the pod, while the block runs."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.stream import WsApiClient

    forward = Forward(namespace, pod, port)
    relays: set[asyncio.Task[None]] = set()
    async with WsApiClient() as api:
        core = client.CoreV1Api(api)

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            # The relay runs in a task of its own, cancelled when the block ends: asyncio
            # (3.11) reports a cancelled connection callback as an exception in a callback.
            relay = asyncio.create_task(_relay(core, forward, reader, writer))
            relays.add(relay)
            try:
                with contextlib.suppress(asyncio.CancelledError):
                    await relay
            finally:
                writer.close()
                relays.discard(relay)

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        forward.local_port = server.sockets[0].getsockname()[1]
        try:
            yield forward
        finally:
            server.close()
            for task in list(relays):
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)
            await server.wait_closed()


async def _relay(
    core: Any, forward: Forward, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    import aiohttp

    try:
        connecting = await core.connect_get_namespaced_pod_portforward(
            forward.pod, forward.namespace, ports=forward.port, _preload_content=False
        )
        async with connecting as ws:
            upload = asyncio.create_task(_upload(reader, ws))
            try:
                await _download(ws, writer, forward.errors)
            finally:
                upload.cancel()
                await asyncio.gather(upload, return_exceptions=True)
    except aiohttp.WSServerHandshakeError as e:
        forward.errors.append(_refused(forward, e.status))
    except (aiohttp.ClientError, OSError) as e:  # OSError: TimeoutError too
        forward.errors.append(f"the port-forward to {forward} broke: {e or type(e).__name__}")


def _refused(forward: Forward, status: int) -> str:
    why = {
        401: "the apiserver did not accept the credentials",
        403: f"forbidden: it needs create on pods/portforward in namespace {forward.namespace}",
        404: f"pod {forward.namespace}/{forward.pod} was not found",
    }.get(status, "the apiserver refused the upgrade to a websocket")
    return f"cannot open a port-forward to {forward} (HTTP {status}): {why}"


async def _upload(reader: asyncio.StreamReader, ws: Any) -> None:
    """What the local client sends, onto the data channel; its end ends nothing (the pod's
    side closes the connection once it answered)."""
    while chunk := await reader.read(CHUNK):
        await ws.send_bytes(bytes([DATA]) + chunk)


async def _download(ws: Any, writer: asyncio.StreamWriter, errors: list[str]) -> None:
    """What the pod sends, to the local client, until the websocket closes; the error channel's
    text into `errors`."""
    import aiohttp

    started: set[int] = set()
    async for message in ws:
        if message.type != aiohttp.WSMsgType.BINARY or not message.data:
            continue
        channel, payload = message.data[0], message.data[1:]
        if channel not in started:
            started.add(channel)
            payload = payload[2:]  # the port number, first on each channel
        if not payload:
            continue
        if channel == DATA:
            writer.write(payload)
            await writer.drain()
        elif channel == ERROR:
            errors.append(payload.decode(errors="replace").strip())
