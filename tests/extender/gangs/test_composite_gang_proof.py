"""A CompositePodGroup planned as one gang, end to end: a PyTorchJob-like pair of PodGroups (its
Master and its Workers) under one CompositePodGroup (scheduling.k8s.io/v1alpha3, kubernetes/api
master scheduling/v1alpha3 types.go: `CompositePodGroupSpec`, `PodGroupSpec.
parentCompositePodGroupName`) is planned in one plan with two slices, through the fake
apiserver serving v1alpha3, the real extender over HTTP and the emulated kube-scheduler, with its
GangScheduling plugin off (the extender's bind barrier, `--native-gang-scheduling=off`) and on
(1.37's PodGroup cycle schedules the hierarchy as one unit; the extender leaves the barrier to
it, `auto`).

Eight 8-GPU nodes, two leaves of four under one spine: the composite requires the spine, each
PodGroup its leaf, so the four Workers (one slice) share one leaf and the Master (the other) sits
beside them. The emulated scheduler has no informer of PodGroups: the test hands it the objects
as kube-scheduler's informer would.
"""

from __future__ import annotations

import dataclasses

import pytest

from kube_rdma.core import keys
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupRef
from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler
from kubesim.scheduler.clock import LoopClock
from kubesim.scheduler.controllers import Controllers, Replicas
from testbed.clustergen import ClusterSpec
from testbed.fakeapi import RESOURCES, FakeApiServer, eventually, native_gang_resources
from tests.extender.gangs.explaining import explained_gang
from tests.extender.gangs.test_gang_proof import CONFIG, TRANSIENT, load
from tests.extender.gangs.test_native_gang_proof import extender, phantom

NS = "team-a"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
TWO_LEAVES = ClusterSpec(
    nodes=8,
    seed=3,
    nodes_per_leaf=4,
    leaves_per_spine=2,
    busy_fraction=0.0,
    rail_down_fraction=0.0,
    flaky_fraction=0.0,
    no_agent_fraction=0.0,
)
CHILDREN = {"llama-master": 1, "llama-worker": 4}


def groups() -> list[tuple[str, Json]]:
    composite = {"apiVersion": V1ALPHA3, "kind": "CompositePodGroup",
                 "metadata": {"name": "llama", "namespace": NS},
                 "spec": {"workloadRef": {"workloadName": "llama", "templateName": "job"},
                          "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                          "schedulingConstraints": {"topology": [{"key": keys.SPINE}]},
                          "disruptionMode": {"all": {}}}}  # fmt: skip
    made: list[tuple[str, Json]] = [("compositepodgroups.scheduling.k8s.io", composite)]
    for name, count in CHILDREN.items():
        spec = {"parentCompositePodGroupName": "llama",
                "workloadRef": {"workloadName": "llama", "templateName": name},
                "schedulingPolicy": {"gang": {"minCount": count}},
                "schedulingConstraints": {"topology": [{"key": keys.LEAF}]}}  # fmt: skip
        group = {"apiVersion": V1ALPHA3, "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": NS}, "spec": spec}  # fmt: skip
        made.append(("podgroups.scheduling.k8s.io", group))
    return made


def job() -> list[Json]:
    pods = Controllers(phantom).pytorch_job(
        NS, "llama", [Replicas("Master", 1, 8), Replicas("Worker", 4, 8)]
    )
    for pod in pods:
        role = "master" if "-master-" in pod["metadata"]["name"] else "worker"
        pod["spec"]["schedulingGroup"] = {"podGroupName": f"llama-{role}"}
    return pods


@pytest.mark.parametrize("plugin", [False, True], ids=["gang-plugin-off", "gang-plugin-on"])
async def test_a_composite_of_two_podgroups_is_planned_as_one_gang_with_two_slices(
    plugin: bool,
) -> None:
    async with FakeApiServer({**RESOURCES, **native_gang_resources("v1alpha3")}) as api:
        leaves = load(api, TWO_LEAVES)
        made = groups()
        for plural, obj in made:
            api.create(plural, obj)
        pods = job()
        config = dataclasses.replace(CONFIG, gang_scheduling=plugin, pod_group_cycle=plugin)

        def gangs(pod: Json) -> tuple[tuple[str, str], int]:
            return (NS, "llama"), 5

        async with extender(api, "auto" if plugin else "off") as (url, source):
            worker = GroupRef("PodGroup", "llama-worker")
            await eventually(
                lambda: len(getattr(source.cluster.native.find(NS, worker), "children", ())) == 2,
                within=10.0,
            )
            async with EmulatedScheduler(
                api.host, url, config, gangs=gangs, clock=LoopClock()
            ) as scheduler:
                for _, obj in made:
                    scheduler.pod_group_changed(None, obj)
                for pod in [*pods[1:3], pods[0], *pods[3:]]:
                    api.create("pods", pod)
                recorder = scheduler.recorder
                placed = await scheduler.run_until(lambda: len(recorder.time_to_place()) == 1, 30.0)
                assert placed, "the composite's gang is placed whole"
                seen = await explained_gang(url, NS, "llama-worker-2")
        assert recorder.max_partial_gangs(TRANSIENT) == 0
        bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in api.objects("pods", NS)}
    workers = {leaves[node] for name, node in bound.items() if "-worker-" in name}
    assert len(workers) == 1, "the Workers' slice shares one leaf"
    assert len(set(bound.values())) == 5
    mode = (
        "kube-scheduler's GangScheduling holds the gang (Permit or the PodGroup cycle); "
        "no extender bind barrier"
        if plugin
        else "the extender's bind barrier holds the gang (--native-gang-scheduling=off)"
    )
    assert seen == {
        "name": f"{NS}/llama",
        "size": 5,
        "source": f"CompositePodGroup {V1ALPHA3}",
        "native": {
            "group": f"CompositePodGroup {NS}/llama ({V1ALPHA3})",
            "minCount": 5,
            "mode": mode,
            "disruptionMode": "All",
            "topology": [keys.SPINE],
            "minGroupCount": 2,
            "podGroups": CHILDREN,
            "slices": keys.LEAF,
        },
    }
