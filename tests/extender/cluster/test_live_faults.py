"""The live source against a misbehaving fake apiserver, through kubernetes-asyncio: after every
fault (streams cut, events duplicated or reordered, 410 Gone, outages with compaction, slow
answers) its cache equals the server's truth object by object, Nodes, Pods, workload owners and
PodGroups alike; readiness is false while it cannot be trusted; a node deleted while the
apiserver was unreachable is never passed by a filter call after the resync; and a CRD absent
at start is said once, at info level, and followed once installed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from extender.cluster.owners import JOBSETS
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.fakeapi import RESOURCES, WORKLOAD_RESOURCES, FakeApiServer, Resource, eventually
from testbed.fakeapi.faults import StreamFault
from testbed.net import serving
from tests.extender.cluster.truth import differences

STALE_AFTER = 0.2
"""The sources' bound on how long the apiserver may be unreachable, scaled down from seconds."""
CONVERGED_WITHIN = 5.0
WATCHES = 13
"""Nodes, Pods, both kinds of PodGroup, the five workload resources and the four DRA resources
the fake serves."""
EVERY_RESOURCE: Mapping[str, Resource] = {**RESOURCES, **WORKLOAD_RESOURCES}
PYTORCH = "pytorchjobs.kubeflow.org"
SCHEDULING = "podgroups.scheduling.x-k8s.io"
VOLCANO = "podgroups.scheduling.volcano.sh"


def running_pod(name: str, node: str | None = None, gpus: int = 2) -> Json:
    phase = "Running" if node else "Pending"
    return nodes.pod(name, gpus=gpus, node_name=node, phase=phase)


def podgroup(name: str, size: int) -> Json:
    return {"metadata": {"name": name}, "spec": {"minMember": size}}


def populate(api: FakeApiServer) -> None:
    for name in ("n1", "n2", "n3"):
        api.create("nodes", nodes.node(name, nodes.hgx()))
    api.create("pods", running_pod("p0", "n1"))
    api.create("pods", running_pod("p1"))
    api.create("pods", running_pod("p2", "n2"))
    api.create(
        PYTORCH, {"metadata": {"name": "llama"}, "spec": {"pytorchReplicaSpecs": {}}}, "team-a"
    )
    api.create("jobs.batch", {"metadata": {"name": "qwen"}, "spec": {"parallelism": 2}}, "team-a")
    api.create(SCHEDULING, podgroup("llama", 4), "team-a")
    api.create(VOLCANO, podgroup("vc", 2), "team-a")


@contextlib.asynccontextmanager
async def live(
    resources: Mapping[str, Resource] = EVERY_RESOURCE,
) -> AsyncIterator[tuple[FakeApiServer, LiveSource]]:
    """A populated fake apiserver, and a live source following it."""
    async with FakeApiServer(resources) as api, api.api_client() as api_client:
        if "jobs.batch" in resources:
            populate(api)
        source = LiveSource(
            client.CoreV1Api(api_client),
            custom_api=client.CustomObjectsApi(api_client),
            initial_backoff=0.01,
            stale_after=STALE_AFTER,
            recheck_absent=0.05,
        )
        task = asyncio.create_task(source.run())
        try:
            await eventually(source.ready, CONVERGED_WITHIN)
            yield api, source
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def converged(source: LiveSource, api: FakeApiServer, gone: set[str]) -> None:
    """The cache equals the truth, and every reflector is watching again."""
    with contextlib.suppress(AssertionError):
        await eventually(lambda: not differences(source, api, gone), CONVERGED_WITHIN)
    assert differences(source, api, gone) == []
    await eventually(lambda: source.ready() and api.watching == WATCHES, CONVERGED_WITHIN)


async def test_the_cache_equals_the_truth_after_every_fault() -> None:
    gone: set[str] = set()
    async with live() as (api, source):
        await converged(source, api, gone)

        api.inject(StreamFault.CUT, "pods")
        api.patch("pods", "p1", {"metadata": {"labels": {"try": "1"}}}, namespace="team-a")
        api.create("pods", running_pod("p3"))
        await converged(source, api, gone)

        api.inject(StreamFault.TRUNCATE, "nodes")
        api.patch("nodes", "n3", {"metadata": {"labels": {"rack": "r3"}}})
        await converged(source, api, gone)

        api.inject(StreamFault.DUPLICATE, times=3)
        api.delete("pods", "p2", "team-a")
        api.patch(SCHEDULING, "llama", {"spec": {"minMember": 6}}, namespace="team-a")
        api.create(PYTORCH, {"metadata": {"name": "mistral"}, "spec": {}}, "team-a")
        await converged(source, api, gone)

        api.inject(StreamFault.REORDER, "pods")
        api.create("pods", running_pod("p4"))
        api.delete("pods", "p0", "team-a")
        await eventually(lambda: source.pod_reflector.relists == 1)
        await converged(source, api, gone)

        api.create("pods", running_pod("p5"))
        api.bind("team-a", {"metadata": {"name": "p1"}, "target": {"name": "n3"}})
        api.expire_watches()  # a 410 ERROR event on every stream
        await converged(source, api, gone)
        assert source.node_reflector.relists == 1

        await api.go_down(refuse=True)
        api.delete("nodes", "n2")
        api.delete(PYTORCH, "llama", "team-a")
        api.delete(VOLCANO, "vc", "team-a")
        gone |= {f"{PYTORCH} team-a/llama", f"{VOLCANO} team-a/vc"}
        api.create("pods", running_pod("p6", "n1"))
        api.compact()  # the history of the outage is lost: every watch must re-list
        await eventually(lambda: not source.ready())
        await api.come_back()
        await eventually(source.ready, CONVERGED_WITHIN)
        await converged(source, api, gone)
        assert source.node_reflector.relists == 2

        await api.go_down(refuse=False)  # 503 for everything
        api.patch("nodes", "n1", {"metadata": {"labels": {"rack": "r9"}}})
        api.delete("pods", "p3", "team-a")
        await eventually(lambda: not source.ready())
        await api.come_back()
        await converged(source, api, gone)
        await eventually(source.ready)
        assert source.node_reflector.relists == 2  # the history was kept: resumed

        api.faults.delay = 0.05
        api.create("pods", running_pod("p7", "n3"))
        await converged(source, api, gone)
        api.faults.delay = 0
    assert [n.name for n in source.cluster.nodes()] == ["n1", "n3"]


async def test_a_node_deleted_during_an_outage_is_never_passed_after_the_resync() -> None:
    async with (
        live() as (api, source),
        serving(create_app(Settings(), source)) as base,
        aiohttp.ClientSession() as session,
    ):
        await api.go_down()
        api.delete("nodes", "n2")
        api.compact()
        await eventually(lambda: readyz(session, base, 503), CONVERGED_WITHIN)
        await api.come_back()
        await eventually(lambda: readyz(session, base, 200), CONVERGED_WITHIN)
        body = {"Pod": running_pod("w0"), "NodeNames": ["n1", "n2"]}
        answers = []

        async def judged() -> bool:
            # A loaded machine may see the cache go out of sync again for a moment (an answer
            # with Error, retried by kube-scheduler); no answer may ever pass n2.
            async with session.post(f"{base}/filter", data=orjson.dumps(body)) as response:
                answers.append(orjson.loads(await response.read()))
            return not answers[-1]["Error"]

        await eventually(judged, CONVERGED_WITHIN)
    assert all("n2" not in a["NodeNames"] for a in answers), answers
    answer = answers[-1]
    assert answer["NodeNames"] == ["n1"]
    assert answer["FailedNodes"] == {
        "n2": "node is not in the extender's cache yet (just added?); it is retried"
    }


async def readyz(session: aiohttp.ClientSession, base: str, status: int) -> bool:
    async with session.get(f"{base}/readyz") as response:
        return response.status == status


async def test_an_absent_crd_is_said_once_and_followed_once_installed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    without = {k: r for k, r in WORKLOAD_RESOURCES.items() if k != "jobsets.jobset.x-k8s.io"}
    async with live({**RESOURCES, **without}) as (api, source):
        await asyncio.sleep(0.3)  # several rechecks
        api.install("jobsets.jobset.x-k8s.io", WORKLOAD_RESOURCES["jobsets.jobset.x-k8s.io"])
        api.create("jobsets.jobset.x-k8s.io", {"metadata": {"name": "gemma"}}, "team-a")
        await eventually(lambda: source.owners.find(JOBSETS, "team-a", "gemma") is not None)
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "jobset" in r.getMessage()]
    assert said == [
        (
            "INFO",
            "jobsets.jobset.x-k8s.io/v1alpha2 is not served by this cluster (its CRD is not "
            "installed); looking again every 0.05s",
        ),
        ("INFO", "jobsets.jobset.x-k8s.io/v1alpha2 is served now; listing it"),
    ]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == []
