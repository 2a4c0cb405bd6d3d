"""A gang's binds against the fake apiserver when the apiserver refuses a member's binding
(500, or 409 as when it lost a race) after the barrier opened: the member whose binding failed is
told so, for kube-scheduler to retry; the other is bound."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed import net
from testbed.fakeapi import FakeApiServer, eventually
from tests.extender.cluster.test_live import node, pod


def member(index: int) -> Json:
    body = pod(f"pair-{index}", 2)
    body["metadata"]["annotations"] |= {keys.GANG: "pair", keys.GANG_SIZE: "2"}
    return body


async def post(session: aiohttp.ClientSession, url: str, body: Json) -> Json:
    async with session.post(url, data=orjson.dumps(body)) as response:
        answer: Json = orjson.loads(await response.read())
        return answer


@pytest.mark.parametrize(("code", "reason"), [(500, "InternalError"), (409, "Conflict")])
async def test_a_member_whose_binding_is_refused_is_told_so(
    fake_api: FakeApiServer, core_v1: Any, code: int, reason: str
) -> None:
    for name in ("n1", "n2"):
        fake_api.create("nodes", node(name))
    created = [fake_api.create("pods", member(i)) for i in (0, 1)]
    source = LiveSource(core_v1)
    app = create_app(Settings(), source)
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        await eventually(source.ready)
        names = ["n1", "n2"]
        planned = [
            (await post(session, f"{base}/filter", {"Pod": p, "NodeNames": names}))["NodeNames"][0]
            for p in created
        ]
        fake_api.fail("POST", "/api/v1/namespaces/team-a/pods/pair-1/binding", code)
        answers = await asyncio.gather(
            *(
                post(
                    session,
                    f"{base}/bind",
                    {
                        "PodName": f"pair-{i}",
                        "PodNamespace": "team-a",
                        "PodUID": created[i]["metadata"]["uid"],
                        "Node": planned[i],
                    },
                )
                for i in (0, 1)
            )
        )
    assert answers == [
        {"Error": ""},
        {
            "Error": f"cannot bind pod team-a/pair-1 to node {planned[1]}: create pods/binding: "
            f"{reason}: fake apiserver: injected failure"
        },
    ]
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in fake_api.objects("pods")}
    assert bound == {"pair-0": planned[0], "pair-1": None}
