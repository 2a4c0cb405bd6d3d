"""A local port forwarded to a pod's port through the (fake) apiserver's websocket
port-forward: bytes both ways, and why a connection failed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from kube_rdma.kube.kubeconfig import load_config
from kube_rdma.kube.portforward import port_forward
from testbed.builders.nodes import pod
from testbed.fakeapi import FakeApiServer


@pytest.fixture
def default_client() -> Iterator[None]:
    saved = client.Configuration.get_default_copy()
    yield
    client.Configuration.set_default(saved)


@pytest.fixture
async def echo() -> AsyncIterator[int]:
    """A TCP server standing for the pod's port: answers each line in capitals, then closes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        writer.write(line.upper() * 3)  # more than one message back
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def ask(port: int, line: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(line)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return answer


async def test_bytes_go_both_ways(
    fake_api: FakeApiServer, echo: int, tmp_path: Path, default_client: None
) -> None:
    fake_api.create("pods", pod("rdma-scheduler-abc", namespace="kube-rdma"), "kube-rdma")
    fake_api.port_forwards.add("kube-rdma", "rdma-scheduler-abc", 8888, echo)
    await load_config(fake_api.write_kubeconfig(tmp_path / "kubeconfig"))
    async with port_forward("kube-rdma", "rdma-scheduler-abc", 8888) as forward:
        assert str(forward) == "kube-rdma/rdma-scheduler-abc:8888"
        assert await ask(forward.local_port, b"hello\n") == b"HELLO\n" * 3
        assert await ask(forward.local_port, b"again\n") == b"AGAIN\n" * 3
        assert forward.errors == []
    request = next(r for r in fake_api.requests if r.path.endswith("/portforward"))
    assert (request.path, request.query) == (
        "/api/v1/namespaces/kube-rdma/pods/rdma-scheduler-abc/portforward",
        {"ports": "8888"},
    )


async def test_why_a_connection_failed_is_kept(
    fake_api: FakeApiServer, tmp_path: Path, default_client: None
) -> None:
    fake_api.create("pods", pod("rdma-scheduler-abc", namespace="kube-rdma"), "kube-rdma")
    await load_config(fake_api.write_kubeconfig(tmp_path / "kubeconfig"))
    async with port_forward("kube-rdma", "rdma-scheduler-abc", 8888) as forward:
        assert await ask(forward.local_port, b"hello\n") == b""
    assert forward.errors == [
        "error forwarding port 8888 to pod kube-rdma/rdma-scheduler-abc: failed to connect to "
        "localhost:8888 inside the pod: connection refused"
    ]
    async with port_forward("kube-rdma", "gone", 8888) as forward:
        assert await ask(forward.local_port, b"hello\n") == b""
    assert forward.errors == [
        "cannot open a port-forward to kube-rdma/gone:8888 (HTTP 404): pod kube-rdma/gone was "
        "not found"
    ]
    fake_api.fail("GET", "/api/v1/namespaces/kube-rdma/pods/rdma-scheduler-abc/portforward", 403)
    async with port_forward("kube-rdma", "rdma-scheduler-abc", 8888) as forward:
        assert await ask(forward.local_port, b"hello\n") == b""
    assert forward.errors[0].endswith(
        "forbidden: it needs create on pods/portforward in namespace kube-rdma"
    )
