"""Kubernetes' own gangs read off a pod's spec and its scheduling.k8s.io group, as each version
of kubernetes/api scheduling/ types.go spells them: v1alpha1 (release-1.35) Workload
`spec.podGroups[].policy.gang.minCount`; v1alpha2 (release-1.36) PodGroup
`spec.schedulingPolicy.gang.minCount`, `disruptionMode: Pod|PodGroup`; v1alpha3 and v1beta1
(master, 1.37) `disruptionMode: {single: {}}|{all: {}}`, `preemptionPolicy`; pods name them by
`spec.workloadRef` (core/v1 release-1.35) or `spec.schedulingGroup.podGroupName` (1.36+)."""

from __future__ import annotations

import logging

import pytest

from extender.cluster.model import Cluster
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.native import HELD, native_line, native_summary
from kube_rdma.core import keys
from kube_rdma.core.frameworks import kubernetes_scheduling as native
from kube_rdma.core.objects import Json

NS = "team-a"


def podgroup(version: str, name: str = "llama", **spec: object) -> Json:
    body: Json = {"schedulingPolicy": {"gang": {"minCount": 4}}, **spec}
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": body}  # fmt: skip


def workload(groups: list[Json]) -> Json:
    meta = {"name": "train", "namespace": NS}
    return {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": meta, "spec": {"podGroups": groups}}  # fmt: skip


def pod(spec: Json, annotations: dict[str, str] | None = None) -> Json:
    meta: Json = {"name": "p", "namespace": NS, "annotations": annotations or {}}
    return {"metadata": meta, "spec": spec}


IN_LLAMA = {"schedulingGroup": {"podGroupName": "llama"}}


def read(cluster: Cluster, obj: Json, annotations: dict[str, str] | None = None) -> object:
    return gang_of(
        pod(obj, annotations), cluster.podgroup_size, native=cluster.native.find, held=True
    )


@pytest.mark.parametrize(
    ("version", "mode", "expected"),
    [
        ("v1alpha2", "PodGroup", "All"),
        ("v1alpha2", "Pod", "Single"),
        ("v1alpha3", {"all": {}}, "All"),
        ("v1beta1", {"single": {}}, "Single"),
        ("v1beta1", None, "Single"),
    ],
)
def test_each_version_spells_the_disruption_mode_its_own_way(
    version: str, mode: object, expected: str
) -> None:
    extra: dict[str, object] = {} if mode is None else {"disruptionMode": mode}
    group = native.read_podgroup(podgroup(version, "llama", **extra))
    assert group is not None
    assert group.disruption == expected


def test_a_podgroup_is_read_whole() -> None:
    obj = podgroup(
        "v1beta1",
        schedulingConstraints={"topology": [{"key": keys.LEAF}]},
        priority=1000,
        preemptionPolicy="Never",
        parentCompositePodGroupName="job",
        resourceClaims=[
            {"name": "nics", "resourceClaimTemplateName": "nics"},
            {"name": "fixed", "resourceClaimName": "shared"},
        ],
    )
    obj["status"] = {
        "conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True"}],
        "resourceClaimStatuses": [{"name": "nics", "resourceClaimName": "llama-nics-x1"}],
    }
    group = native.read_podgroup(obj)
    assert group == native.NativeGroup(
        "PodGroup", NS, "llama", "v1beta1", 4, (keys.LEAF,), "Single", 1000, "", "Never",
        (native.GroupClaim("nics", "", "nics", "llama-nics-x1"),
         native.GroupClaim("fixed", "shared", "", "shared")),
        "job", True,
    )  # fmt: skip
    assert str(group) == f"PodGroup {NS}/llama (scheduling.k8s.io/v1beta1)"


def test_other_objects_and_versions_are_not_read() -> None:
    assert native.read_podgroup(podgroup("v9")) is None
    assert native.read_podgroup({**podgroup("v1beta1"), "apiVersion": "x/v1beta1"}) is None
    assert native.read_workload(podgroup("v1beta1")) is None
    assert native.group_ref({}) is None


def test_pods_name_their_group_by_the_spec_field_of_their_release() -> None:
    ref = native.group_ref(
        {"workloadRef": {"name": "w", "podGroup": "g", "podGroupReplicaKey": "1"}}
    )
    assert ref == native.GroupRef("Workload", "w", "g", "1")
    assert ref.gang_name == "w/g/1"
    assert str(ref) == "Workload w podGroup g"
    ref = native.group_ref(IN_LLAMA)
    assert ref == native.GroupRef("PodGroup", "llama")
    assert ref.gang_name == "llama"
    assert str(ref) == "PodGroup llama"


def test_a_pod_in_a_podgroup_is_a_gang_member_sized_by_min_count() -> None:
    cluster = Cluster()
    cluster.upsert_podgroup(podgroup("v1alpha2", disruptionMode="PodGroup"))
    gang = read(cluster, IN_LLAMA)
    assert gang == Gang(NS, "llama", 4, "PodGroup scheduling.k8s.io/v1alpha2")
    assert isinstance(gang, Gang)
    assert gang.held
    assert gang.native is not None
    summary = native_summary(gang)
    assert summary == {
        "group": f"PodGroup {NS}/llama (scheduling.k8s.io/v1alpha2)",
        "minCount": 4,
        "mode": HELD,
        "disruptionMode": "All",
    }
    assert native_line(summary).endswith("disruption All")


def test_a_workload_of_1_35_sizes_each_of_its_pod_groups() -> None:
    cluster = Cluster()
    cluster.upsert_podgroup(
        workload([{"name": "workers", "policy": {"gang": {"minCount": 3}}},
                  {"name": "driver", "policy": {"basic": {}}}])
    )  # fmt: skip
    spec = {"workloadRef": {"name": "train", "podGroup": "workers"}}
    assert read(cluster, spec) == Gang(
        NS, "train/workers", 3, "Workload scheduling.k8s.io/v1alpha1"
    )
    basic = {"workloadRef": {"name": "train", "podGroup": "driver"}}
    assert read(cluster, basic) == Singleton(), "the basic policy is no gang"
    cluster.delete_podgroup(workload([]))
    assert isinstance(gone := read(cluster, spec), Gang)
    assert "does not exist yet" in gone.refusal


def test_a_pod_naming_a_group_that_does_not_exist_yet_waits() -> None:
    gang = read(Cluster(), IN_LLAMA)
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/llama: the pod names PodGroup llama, which does not exist yet; "
        "waiting for it, as kube-scheduler does"
    )
    assert native_summary(gang) == {"waiting": gang.refusal}
    assert native_line({"waiting": gang.refusal}) == gang.refusal


def test_kube_rdma_keys_that_contradict_the_group_are_refused_naming_both() -> None:
    cluster = Cluster()
    cluster.upsert_podgroup(podgroup("v1beta1", preemptionPolicy="Never", priority=5))
    gang = read(cluster, IN_LLAMA, {keys.GANG: "other", keys.GANG_SIZE: "8"})
    assert isinstance(gang, Gang)
    assert gang.refusal == (
        f"gang {NS}/llama: kube-rdma.io/gang='other' names another gang than PodGroup llama "
        "('llama'); kube-rdma.io/gang-size='8' differs from PodGroup llama minCount=4; "
        "remove or correct the annotation"
    )
    summary = native_summary(gang)
    assert summary is not None
    assert summary["refused"] == gang.refusal
    assert summary["preemptionPolicy"] == "Never"
    assert summary["priority"] == 5
    assert "preemptionPolicy Never" in native_line(summary)
    agreeing = read(cluster, IN_LLAMA, {keys.GANG: "llama", keys.GANG_SIZE: "4"})
    assert isinstance(agreeing, Gang)
    assert not agreeing.refusal


def test_a_group_of_one_is_no_gang_and_groups_are_not_read_without_a_lookup() -> None:
    cluster = Cluster()
    cluster.upsert_podgroup(podgroup("v1beta1", schedulingPolicy={"gang": {"minCount": 1}}))
    assert read(cluster, IN_LLAMA) == Singleton()
    assert gang_of(pod(IN_LLAMA), cluster.podgroup_size) == Singleton()


def test_an_unknown_version_is_read_as_absent_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    with caplog.at_level(logging.WARNING):
        cluster.upsert_podgroup(podgroup("v2"))
        cluster.upsert_podgroup(podgroup("v2", name="other"))
        cluster.native.warn_unknown("v2")
    assert isinstance(gang := read(cluster, IN_LLAMA), Gang)
    assert gang.refusal
    warned = [r for r in caplog.records if "scheduling.k8s.io/v2" in r.getMessage()]
    assert len(warned) == 1
    assert "read as absent" in warned[0].getMessage()


def test_a_listing_replaces_the_groups_of_its_version_only() -> None:
    cluster = Cluster()
    cluster.replace_native("PodGroup", "v1alpha2", [podgroup("v1alpha2", name="a")])
    cluster.replace_native("PodGroup", "v1beta1", [podgroup("v1beta1", name="b")])
    cluster.replace_native("Workload", "v1alpha1", [workload([])])
    cluster.replace_native("PodGroup", "v1alpha2", [])
    cluster.replace_native("Workload", "v1alpha1", [])
    found = cluster.native.find
    assert found(NS, native.GroupRef("PodGroup", "a")) is None
    assert found(NS, native.GroupRef("PodGroup", "b")) is not None
    assert found(NS, native.GroupRef("Workload", "train", "x")) is None


def test_a_snapshot_holds_groups_too() -> None:
    source = SnapshotSource([podgroup("v1beta1"), workload([])])
    assert source.cluster.native.find(NS, native.GroupRef("PodGroup", "llama")) is not None
    assert source.cluster.native.claims_of(pod(IN_LLAMA)) == ()
    assert source.cluster.native.claims_of(pod({})) == ()
