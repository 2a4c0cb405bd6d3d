"""A CompositePodGroup read and resolved as one gang (kubernetes/api master,
scheduling/v1alpha3 types.go: `CompositePodGroupSpec` {parentCompositePodGroupName, workloadRef,
schedulingPolicy {basic | gang {minGroupCount}}, schedulingConstraints, disruptionMode, priority,
preemptionPolicy}, `PodGroupSpec.parentCompositePodGroupName`, `WorkloadMaxTreeDepth` 4), and
the hierarchy checks of kube-scheduler's workload forest at master (validateHierarchy: a missing
ancestor waits, a cycle or a branch deeper than WorkloadMaxTreeDepth is refused)."""

from __future__ import annotations

import logging

import pytest

from extender.cluster.model import Cluster
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.native import (
    beyond_cluster,
    child_rank,
    group_placement,
    native_line,
    native_summary,
)
from extender.gangs.plan import Plan
from extender.gangs.slices import cut, slice_fill, span
from extender.levels.placement import Placement
from extender.podview import PodView
from kube_rdma.core import keys
from kube_rdma.core.frameworks import kubernetes_scheduling as native
from kube_rdma.core.objects import Json
from tests.extender.gangs.test_slices import fits

NS = "team-a"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
SOURCE = f"CompositePodGroup {V1ALPHA3}"
VIEW = PodView(NS, "p", "uid-p", 8, {}, "nvidia.com/gpu", None, 0)


def composite(name: str = "job", parent: str | None = None, **spec: object) -> Json:
    body: Json = {"schedulingPolicy": {"gang": {"minGroupCount": 2}}, **spec}
    if parent:
        body["parentCompositePodGroupName"] = parent
    return {"apiVersion": V1ALPHA3, "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": body}  # fmt: skip


def podgroup(name: str, count: int, parent: str | None = "job", level: str | None = None) -> Json:
    body: Json = {"schedulingPolicy": {"gang": {"minCount": count}}}
    if parent:
        body["parentCompositePodGroupName"] = parent
    if level:
        body["schedulingConstraints"] = {"topology": [{"key": level}]}
    return {"apiVersion": V1ALPHA3, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": body}  # fmt: skip


def pod(group: str, annotations: dict[str, str] | None = None, index: int | None = None) -> Json:
    labels = {} if index is None else {"training.kubeflow.org/replica-index": str(index)}
    meta: Json = {"name": f"{group}-{index or 0}", "namespace": NS, "labels": labels,
                  "annotations": annotations or {}}  # fmt: skip
    return {"metadata": meta, "spec": {"schedulingGroup": {"podGroupName": group}}}


def cluster_of(*objects: Json) -> Cluster:
    cluster = Cluster()
    for obj in objects:
        cluster.upsert_podgroup(obj)
    return cluster


def read(cluster: Cluster, member: Json) -> Gang | Singleton:
    return gang_of(member, cluster.podgroup_size, native=cluster.native.find, held=True)


PAIR = (
    composite(schedulingConstraints={"topology": [{"key": keys.SPINE}]}, priority=7),
    podgroup("job-master", 1, level=keys.LEAF),
    podgroup("job-worker", 4, level=keys.LEAF),
)


def test_a_composite_pod_group_is_read_whole() -> None:
    obj = composite(
        parent="root",
        schedulingConstraints={"topology": [{"key": keys.SPINE}]},
        disruptionMode={"all": {}},
        priority=7,
        priorityClassName="high",
        preemptionPolicy="Never",
    )
    obj["status"] = {"conditions": [{"type": "CompositePodGroupInitiallyScheduled",
                                     "status": "True"}]}  # fmt: skip
    assert native.read_composite(obj) == native.NativeGroup(
        "CompositePodGroup", NS, "job", "v1alpha3", None, (keys.SPINE,), "All", 7, "high",
        "Never", parent="root", scheduled=True, min_group_count=2,
    )  # fmt: skip
    basic = composite(schedulingPolicy={"basic": {}})
    assert native.read_composite(basic) == native.NativeGroup(
        "CompositePodGroup", NS, "job", "v1alpha3", None
    )
    assert native.read_composite({**obj, "apiVersion": "scheduling.k8s.io/v1beta1"}) is None


def test_the_pods_of_both_podgroups_are_one_gang_sized_by_their_min_counts() -> None:
    cluster = cluster_of(*PAIR)
    master, worker = read(cluster, pod("job-master")), read(cluster, pod("job-worker"))
    assert master == worker == Gang(NS, "job", 5, SOURCE)
    assert isinstance(worker, Gang)
    assert worker.native is not None
    assert [(g.name, g.min_count) for g in worker.native.children] == [
        ("job-master", 1),
        ("job-worker", 4),
    ]
    assert worker.native.priority == 7
    summary = native_summary(worker)
    assert summary is not None
    assert summary["podGroups"] == {"job-master": 1, "job-worker": 4}
    assert summary["slices"] == keys.LEAF
    assert summary["minCount"] == 5
    assert native_line(summary).endswith(
        f"2 PodGroups as slices in {keys.LEAF}: job-master (1), job-worker (4)"
    )


def test_its_podgroups_are_the_slices_and_its_topology_the_whole_gangs_level() -> None:
    gang = read(cluster_of(*PAIR), pod("job-worker"))
    assert isinstance(gang, Gang)
    placed = group_placement(Placement(), gang)
    assert placed == Placement(
        required=keys.SPINE, slice_level=keys.LEAF, source=SOURCE, slice_sizes=(1, 4)
    )
    assert (
        placed.describe() == f"required {keys.SPINE}, slices of 1+4 in one {keys.LEAF} ({SOURCE})"
    )


def test_each_member_ranks_in_its_podgroups_slice() -> None:
    gang = read(cluster_of(*PAIR), pod("job-worker"))
    assert isinstance(gang, Gang)
    assert gang.native is not None
    assert child_rank(gang.native, pod("job-master")) == 0
    assert child_rank(gang.native, pod("job-worker", index=2)) == 3
    assert child_rank(gang.native, pod("job-worker")) == 1
    assert child_rank(gang.native, pod("other")) is None


def test_slices_of_different_sizes_each_fill_one_domain_and_own_their_slots() -> None:
    layout = {"a0": ("r1", 2), "a1": ("r1", 1), "b0": ("r2", 4)}
    assert slice_fill(sorted(layout), fits(layout), "rack", (1, 4)) == [
        "a0",
        "b0",
        "b0",
        "b0",
        "b0",
    ]
    assert slice_fill(sorted(layout), fits(layout), "rack", (4, 4)) is None
    assert cut(5, 2) == [2, 2, 1]
    assert cut(5, 0, (1, 4)) == [1, 4]
    assert [span(r, 0, (1, 4)) for r in (0, 1, 4, 5)] == [(0, 1), (1, 4), (1, 4), None]
    assert span(5, 2) == (4, 2)
    plan = Plan(Gang(NS, "job", 5, SOURCE), VIEW, ["m", "w", "w", "w", "w"], "spine-0", 0, 0)
    plan.slice_sizes = (1, 4)
    assert plan.slot_of((NS, "worker"), rank=1) == 1
    assert plan.slot_of((NS, "master"), rank=0) == 0


def test_a_child_naming_a_composite_that_does_not_exist_waits() -> None:
    gang = read(cluster_of(podgroup("job-worker", 4)), pod("job-worker"))
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/job-worker: its PodGroup job-worker names CompositePodGroup job, which does "
        "not exist yet; waiting for it, as kube-scheduler does"
    )
    assert native_summary(gang) == {"waiting": gang.refusal}


def test_a_composite_waits_for_min_group_count_children() -> None:
    gang = read(cluster_of(composite(), podgroup("job-worker", 4)), pod("job-worker"))
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/job-worker: CompositePodGroup job needs minGroupCount 2 child groups, 1 "
        "exist (job-worker); waiting for the rest, as kube-scheduler does"
    )


def test_a_cycle_is_refused_naming_its_composites() -> None:
    cluster = cluster_of(
        composite("a", parent="b"), composite("b", parent="a"), podgroup("w", 2, "a")
    )
    gang = read(cluster, pod("w"))
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/w: CompositePodGroups a -> b -> a form a cycle; it is never placed"
    )
    summary = native_summary(gang)
    assert summary is not None
    assert summary["refused"] == gang.refusal


def test_a_hierarchy_deeper_than_kube_scheduler_allows_is_refused_with_the_names() -> None:
    chain = [composite("c1"), composite("c2", "c1"), composite("c3", "c2")]
    branches = [podgroup("w", 2, "c3"), podgroup("v", 2, "c3"), composite("d2", "c1"),
                podgroup("x", 1, "d2"), podgroup("y", 1, "d2"), composite("d3", "c2"),
                podgroup("z", 1, "d3"), podgroup("u", 1, "d3")]  # fmt: skip
    allowed = cluster_of(*chain, *branches)
    assert read(allowed, pod("w")) == Gang(NS, "c1", 8, SOURCE), "4 levels: the most allowed"
    deep = cluster_of(*chain, composite("c4", "c3"), podgroup("w", 2, "c4"))
    gang = read(deep, pod("w"))
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/w: the hierarchy under CompositePodGroup c1 is 5 levels deep "
        "(c1 -> c2 -> c3 -> c4 -> w), more than the 4 kube-scheduler allows "
        "(WorkloadMaxTreeDepth); it is never placed"
    )


def test_a_basic_composite_leaves_each_podgroup_a_gang_of_its_own() -> None:
    cluster = cluster_of(composite(schedulingPolicy={"basic": {}}), podgroup("job-worker", 4))
    gang = read(cluster, pod("job-worker"))
    assert gang == Gang(NS, "job-worker", 4, f"PodGroup {V1ALPHA3}")
    assert isinstance(gang, Gang)
    assert gang.native is not None
    summary = native_summary(gang)
    assert summary is not None
    assert summary["compositePodGroup"] == "job"


def test_a_nested_composite_is_planned_at_its_highest_gang_ancestor() -> None:
    cluster = cluster_of(composite("root", schedulingPolicy={"basic": {}}),
                         composite("job", "root"), podgroup("job-master", 1),
                         podgroup("job-worker", 4),
                         composite("replica", "job",
                                   schedulingPolicy={"gang": {"minGroupCount": 1}}),
                         podgroup("extra", 2, "replica"))  # fmt: skip
    gang = read(cluster, pod("extra"))
    assert gang == Gang(NS, "job", 7, SOURCE)
    assert isinstance(gang, Gang)
    assert gang.native is not None
    assert [g.name for g in gang.native.children] == ["job-master", "job-worker", "extra"]


@pytest.mark.parametrize(
    ("annotations", "clash"),
    [
        ({keys.GANG_SIZE: "4"}, "kube-rdma.io/gang-size='4' differs from CompositePodGroup job "
                                "minCount=5 (its PodGroups' minCounts summed)"),
        ({keys.GANG: "job-worker"}, "kube-rdma.io/gang='job-worker' names another gang than "
                                    "CompositePodGroup job ('job')"),
        ({keys.TOPOLOGY_SLICE_REQUIRED: keys.SPINE, keys.TOPOLOGY_SLICE_SIZE: "4"},
         f"kube-rdma.io/topology-slice-required={keys.SPINE!r} differs from the slices of "
         f"CompositePodGroup job: its PodGroups, in {keys.LEAF!r} "
         "(schedulingConstraints.topology)"),
        ({keys.TOPOLOGY_SLICE_REQUIRED: keys.LEAF, keys.TOPOLOGY_SLICE_SIZE: "2"},
         "kube-rdma.io/topology-slice-size='2' differs from the pod's slice of CompositePodGroup "
         "job: PodGroup job-worker minCount=4"),
    ],
)  # fmt: skip
def test_kube_rdma_keys_contradicting_the_composite_are_refused_naming_both(
    annotations: dict[str, str], clash: str
) -> None:
    gang = read(cluster_of(*PAIR), pod("job-worker", annotations))
    assert isinstance(gang, Gang)
    assert gang.refusal == f"gang {NS}/job: {clash}; remove or correct the annotation"
    agreeing = {keys.GANG: "job", keys.GANG_SIZE: "5", keys.TOPOLOGY_SLICE_REQUIRED: keys.LEAF,
                keys.TOPOLOGY_SLICE_SIZE: "4"}  # fmt: skip
    fine = read(cluster_of(*PAIR), pod("job-worker", agreeing))
    assert isinstance(fine, Gang)
    assert not fine.refusal


def test_a_pods_own_required_topology_other_than_the_composites_is_refused() -> None:
    gang = read(cluster_of(*PAIR), pod("job-worker"))
    assert isinstance(gang, Gang)
    other = group_placement(Placement(required=keys.LEAF, source="kube-rdma.io"), gang)
    assert other.problem == (
        f"kube-rdma.io requires topology {keys.LEAF!r}, but its CompositePodGroup {NS}/job "
        f"({V1ALPHA3}) requires {keys.SPINE!r} (schedulingConstraints.topology); make them agree"
    )


def test_podgroups_asking_different_levels_are_refused_naming_both() -> None:
    cluster = cluster_of(
        composite(), podgroup("a", 2, level=keys.LEAF), podgroup("b", 2, level="zone")
    )
    gang = read(cluster, pod("a"))
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/a: its PodGroups a (topology {keys.LEAF!r}) and b (topology 'zone') under "
        "CompositePodGroup job ask different levels; kube-rdma places each PodGroup of a "
        "CompositePodGroup as a slice, all in one level: make them agree; it is never placed"
    )


def test_a_composite_beyond_the_whole_cluster_is_refused_with_the_numbers() -> None:
    gang = read(cluster_of(*PAIR), pod("job-worker"))
    assert isinstance(gang, Gang)
    assert beyond_cluster(gang, VIEW, 5, [(1, {}), (1, {})]) == (
        f"gang {NS}/job: its {SOURCE} needs minCount 5 (1 + 4) x (8 GPU, 0 rails), 5 still to "
        "place, but the whole cluster holds 2 even with nothing else running; it can never be "
        "placed"
    )


def test_a_composite_of_an_unknown_version_is_absent_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    unknown = {**composite(), "apiVersion": "scheduling.k8s.io/v1beta1"}
    with caplog.at_level(logging.WARNING):
        cluster.upsert_podgroup(unknown)
        cluster.upsert_podgroup({**unknown, "metadata": {"name": "other", "namespace": NS}})
    cluster.upsert_podgroup(podgroup("job-worker", 4))
    gang = read(cluster, pod("job-worker"))
    assert isinstance(gang, Gang)
    assert "names CompositePodGroup job, which does not exist yet" in gang.refusal
    warned = [r.getMessage() for r in caplog.records if "CompositePodGroup" in r.getMessage()]
    assert warned == [
        "CompositePodGroup scheduling.k8s.io/v1beta1 is not a version kube-rdma reads (it reads "
        "v1alpha3): its CompositePodGroups are read as absent, and the groups naming them wait "
        "for them"
    ]


def test_a_listing_replaces_the_composites_and_a_deletion_makes_the_children_wait() -> None:
    cluster = cluster_of(*PAIR)
    cluster.replace_native("CompositePodGroup", "v1alpha3", [composite("other")])
    gang = read(cluster, pod("job-worker"))
    assert isinstance(gang, Gang)
    assert "which does not exist yet" in gang.refusal
    cluster.upsert_podgroup(PAIR[0])
    assert read(cluster, pod("job-worker")) == Gang(NS, "job", 5, SOURCE)
    cluster.delete_podgroup(PAIR[0])
    gone = read(cluster, pod("job-worker"))
    assert isinstance(gone, Gang)
    assert gone.refusal
    assert cluster.native.claims_of(pod("job-worker")) == ()
