"""The big-gang proof on a DRA cluster: every member's GPUs and NICs come from its own resource
claim. The emulated kube-scheduler (kubesim/scheduler/dynamicresources.py) allocates a member's
claim and reserves it for the member before the bind call, and takes the member out of
`reservedFor` again when the call times out at the gang's barrier, as kube-scheduler's
DynamicResources plugin does. Most members' requests time out; when the last arrives, the
extender binds them itself, each after putting it back in its claim's `reservedFor`. The gang
ends placed whole, with every member's claim allocated on its node and reserved for it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kubernetes_asyncio import client

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.live import LiveSource
from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler, Job, bound_node
from testbed.clustergen import generate
from testbed.clustergen.dra import NIC_CLASS, RDMA_SELECTOR, dra_form
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import serving
from tests.extender.gangs.test_big_gang_proof import BARRIER
from tests.extender.gangs.test_big_gang_proof import CLUSTER as PROOF_CLUSTER
from tests.extender.gangs.test_big_gang_proof import CONFIG as PROOF_CONFIG

CLUSTER = replace(PROOF_CLUSTER, nodes=32, nodes_per_leaf=16)
CONFIG = replace(PROOF_CONFIG, managed_resources=())
"""An empty managedResources: claim-only pods reach the extender (docs/dra.md)."""
GANG = Job("llm", "team-llm", members=16, gpus=8, arrival=0.0, duration=60.0)


def with_claim(pod: Json) -> tuple[Json, Json]:
    """The member asking for 8 GPUs and 8 RDMA NICs through its own claim, and that claim."""
    name = f"{pod['metadata']['name']}-devices"
    for container in pod["spec"]["containers"]:
        container["resources"] = {"claims": [{"name": "devices"}]}
    pod["spec"]["resourceClaims"] = [{"name": "devices", "resourceClaimName": name}]
    nic = {
        "deviceClassName": NIC_CLASS["metadata"]["name"],
        "count": 8,
        "selectors": [{"cel": {"expression": RDMA_SELECTOR}}],
    }
    requests = [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}},
        {"name": "nic", "exactly": nic},
    ]
    claim = {
        "metadata": {"name": name, "namespace": pod["metadata"]["namespace"]},
        "spec": {"devices": {"requests": requests}},
    }
    return pod, claim


async def test_a_dra_gang_is_placed_whole_with_every_claim_reserved(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    for obj in dra_form([o for o in generate(CLUSTER) if o["kind"] == "Node"]):
        plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("s") else "s")
        fake_api.create(plural, obj, obj["metadata"].get("namespace"))
    members = [with_claim(p) for p in GANG.pods(CONFIG.scheduler_name)]
    for _, claim in members:
        fake_api.create("resourceclaims", claim, GANG.namespace)
    custom = client.CustomObjectsApi(core_v1.api_client)
    source = LiveSource(core_v1, custom_api=custom)
    app = create_app(Settings(gangs=BARRIER, sweep_interval=0.05), source)
    async with serving(app) as url:
        dra = source.cluster.dra
        await eventually(
            lambda: (
                len(dra.claims) == GANG.members
                and len(dra.classes) == 2
                and len(list(dra.nodes())) == CLUSTER.nodes
            ),
            within=30.0,
        )
        async with EmulatedScheduler(fake_api.host, url, CONFIG) as scheduler:
            for pod, _ in members:
                await scheduler.connections.apiserver.create_pod(pod)

            def all_bound() -> bool:
                pods = scheduler.informer.pods()
                return len(pods) == GANG.members and all(bound_node(p) for p in pods)

            assert await scheduler.run_until(all_bound, timeout=60.0)
        planner = app[EXTENDER].planner
        plans = [d for d in planner.history if d.gang.name == GANG.name]
    # A member's claim is allocated on its planned node before its bind call (PreBind): the
    # devices its node then lacks are its own, and must not make the plan look stale.
    assert len(plans) == 1, f"placed from its first plan ({plans})"
    kept = {b.pod for b in scheduler.binds if "keeps its place" in b.error}
    assert len(kept) >= GANG.members // 2, "most members' first bind requests timed out"
    pods = {p["metadata"]["name"]: p for p in fake_api.objects("pods", GANG.namespace)}
    nodes = {bound_node(p) for p in pods.values()}
    assert len(nodes) == GANG.members, "one member per node"
    for pod, claim in members:
        name = pod["metadata"]["name"]
        stored = fake_api.get("resourceclaims", claim["metadata"]["name"], GANG.namespace)
        status = stored["status"]
        uid = pods[name]["metadata"]["uid"]
        assert status["reservedFor"] == [{"resource": "pods", "name": name, "uid": uid}]
        results = status["allocation"]["devices"]["results"]
        assert {r["pool"] for r in results} == {bound_node(pods[name])}
        assert len(results) == 16
