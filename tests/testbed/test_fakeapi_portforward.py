"""The fake apiserver's pods/NAME/portforward: what it refuses before the websocket upgrade."""

from __future__ import annotations

import aiohttp

from testbed.builders.nodes import pod
from testbed.fakeapi import FakeApiServer

PATH = "/api/v1/namespaces/kube-rdma/pods/p/portforward"


async def test_refusals_before_the_upgrade(fake_api: FakeApiServer) -> None:
    fake_api.create("pods", pod("p", namespace="kube-rdma"), "kube-rdma")
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{fake_api.host}{PATH}") as response:
            assert response.status == 400
            assert (await response.json())[
                "message"
            ] == "fake apiserver: give one port: ?ports=PORT"
        async with session.get(f"{fake_api.host}{PATH}?ports=8888") as response:
            assert response.status == 400
            assert (await response.json())["message"] == (
                "pods/portforward needs an upgrade to a websocket"
            )
        async with session.post(f"{fake_api.host}{PATH}?ports=8888") as response:
            assert response.status == 405
        async with session.get(f"{fake_api.host}{PATH.replace('/p/', '/q/')}?ports=1") as response:
            assert response.status == 404
