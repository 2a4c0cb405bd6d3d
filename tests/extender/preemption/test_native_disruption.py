"""Workload-aware preemption of Kubernetes' own gangs, as kube-scheduler 1.37 reads a PodGroup
(kubernetes/api master scheduling/v1beta1 types.go: `DisruptionMode` "all specifies that all
children can only be disrupted together", "single ... independently"; `PreemptionPolicy`
Never; v1alpha2 spells the modes `PodGroup` and `Pod`): a group with `disruptionMode: All` is
never partly evicted, neither by kube-scheduler's preemption through the preempt verb nor by the
extender's own; `Single` lets its pods go one by one; `preemptionPolicy: Never` keeps the group's
gang from preempting, and explain says why."""

from __future__ import annotations

import json
from typing import Any

import pytest

from extender.cluster.devices import DEFAULT_DRA_NAMES
from extender.cluster.model import Cluster
from extender.gangs.identity import Gang, gang_of
from extender.preemption.freeing import Freeing
from extender.preemption.priority import waiting_priority
from extender.preemption.units import Units
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.preemption.test_verb import PREEMPTOR, args, meta
from tests.extender.test_app import serving

NS = "team-a"
NODES = [nodes.node(f"gpu-{i}", nodes.hgx()) for i in range(1, 4)]


def group(name: str, mode: object, version: str = "v1beta1", **spec: Any) -> Json:
    body = {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": mode, **spec}
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": body}  # fmt: skip


def member(name: str, node: str | None, podgroup: str, priority: int = 0) -> Json:
    pod = nodes.pod(name, gpus=8, node_name=node, phase="Running" if node else "Pending")
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["schedulingGroup"] = {"podGroupName": podgroup}
    pod["spec"]["priority"] = priority
    return pod


TOGETHER = [member("all-1", "gpu-1", "together"), member("all-2", "gpu-2", "together")]
ALONE = [member("one-3", "gpu-3", "alone")]


@pytest.mark.parametrize(
    ("mode", "version"),
    [({"all": {}}, "v1beta1"), ({"all": {}}, "v1alpha3"), ("PodGroup", "v1alpha2")],
)
async def test_the_preempt_verb_never_takes_part_of_an_all_group(
    mode: object, version: str
) -> None:
    objects = [*NODES, PREEMPTOR, group("together", mode, version), *TOGETHER]
    async with serving(objects) as client:
        victims = {"gpu-1": meta("uid-all-1"), "gpu-2": meta("uid-all-2")}
        status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {}})


async def test_the_preempt_verb_never_takes_one_podgroup_of_an_all_composite() -> None:
    """A CompositePodGroup (v1alpha3) with `disruptionMode: {all: {}}`, "all children groups can
    only be disrupted together": its two PodGroups are one gang, and a victim set holding one
    of them only is never answered."""
    composite = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                 "metadata": {"name": "job", "namespace": NS},
                 "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}},
                          "disruptionMode": {"all": {}}}}  # fmt: skip
    children = [
        group(name, {"single": {}}, "v1alpha3", parentCompositePodGroupName="job",
              schedulingPolicy={"gang": {"minCount": 1}})
        for name in ("first", "second")
    ]  # fmt: skip
    pods = [member("all-1", "gpu-1", "first"), member("all-2", "gpu-2", "second")]
    async with serving([*NODES, PREEMPTOR, composite, *children, *pods]) as client:
        status, answer = await client.post("preempt", args(PREEMPTOR, {"gpu-1": meta("uid-all-1")}))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {}})


async def test_a_single_group_gives_its_pods_up_one_by_one_like_pods_of_no_gang() -> None:
    objects = [*NODES, PREEMPTOR, group("alone", {"single": {}}), *ALONE,
               group("together", {"all": {}}), *TOGETHER]  # fmt: skip
    async with serving(objects) as client:
        victims = {"gpu-1": meta("uid-all-1"), "gpu-3": meta("uid-one-3")}
        status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {"gpu-3": meta("uid-one-3")}})


def cluster_of(objects: list[Json]) -> Cluster:
    cluster = Cluster()
    cluster.replace_nodes([o for o in objects if o["kind"] == "Node"])
    cluster.replace_pods([o for o in objects if o["kind"] == "Pod"])
    for obj in objects:
        if obj["kind"] == "PodGroup":
            cluster.upsert_podgroup(obj)
    return cluster


def test_the_extenders_own_preemption_takes_an_all_group_whole_and_a_single_one_by_pod() -> None:
    pair = [member("one-1", "gpu-1", "alone", 7), member("one-2", "gpu-2", "alone", 7)]
    cluster = cluster_of(
        [*NODES, group("alone", {"single": {}}, priority=3), *pair, group("together", {"all": {}}),
         member("all-3", "gpu-3", "together"), member("all-4", None, "together")]
    )  # fmt: skip

    def gang(pod: Json) -> Any:
        return gang_of(pod, cluster.podgroup_size, native=cluster.native.find)

    units = Units(cluster, gang, Freeing(cluster, DEFAULT_DRA_NAMES), ("nvidia.com/gpu",))
    found = {u.name: (u.pods, u.priority, u.gang) for u in units.units(lambda p: True, ("x", "y"))}
    assert found == {
        f"pod {NS}/one-1": (((NS, "one-1"),), 3, False),
        f"pod {NS}/one-2": (((NS, "one-2"),), 3, False),
        f"gang {NS}/together": (((NS, "all-3"),), 0, True),
    }, "the group's priority (3) is its pods' in preemption, over their own (7)"
    preemptor = gang(member("x", None, "alone"))
    assert isinstance(preemptor, Gang)
    assert waiting_priority(preemptor, member("x", None, "alone", 50), 0) == 3


async def test_a_group_whose_preemption_policy_is_never_neither_preempts_nor_holds() -> None:
    never = group("urgent", {"all": {}}, priority=1000, preemptionPolicy="Never")
    waiting = [member("u-1", None, "urgent"), member("u-2", None, "urgent")]
    low = [member("low-1", "gpu-1", "low"), member("low-2", "gpu-2", "low")]
    low_group = group("low", {"single": {}})
    objects = [*NODES[:2], never, *waiting, low_group, *low]
    async with serving(objects) as client:
        await client.post("filter", {"Pod": waiting[0], "NodeNames": ["gpu-1", "gpu-2"]})
        status, text = await client.get(f"/explain?namespace={NS}&name=u-1")
    assert status == 200
    body = json.loads(text)
    reason = body["gang"]["waiting"]["reason"]
    assert reason.endswith(
        f"its PodGroup {NS}/urgent (scheduling.k8s.io/v1beta1) says preemptionPolicy: Never: "
        "it neither preempts nor holds nodes"
    )
    assert "hold" not in body["gang"]
    assert body["gang"]["waiting"]["priority"] == 1000
