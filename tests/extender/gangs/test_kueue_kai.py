"""Gangs placed as KAI scheduler and Kueue document it.

- KAI (NVIDIA/KAI-Scheduler docs/topology/README.md, "Example"): zone A has racks A1 (2 nodes)
  and A2-A4 (1 node each), zone B racks B1-B3 (2 nodes each), 1 GPU per node; a Job of 3
  one-GPU tasks annotated to require the zone and prefer the rack goes to zone A (the fewer
  GPUs available: bin-packing), rack A1 filled before A2.
- Kueue (kubernetes-sigs/kueue site/static/examples/tas/sample-job-required.yaml): 10 pods
  requiring one `cloud.provider.com/topology-rack`; where no rack holds 10, refused at once.
- Pods Kueue's TAS placed carry its node selectors: planned inside that assignment, never
  against it, even when their template's annotation asks for one rack.
"""

from __future__ import annotations

from extender.gangs.planner import GangSettings
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.gangs.fabric import Fabric, gang_members

ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"
KAI_RACKS = {"A1": 2, "A2": 1, "A3": 1, "A4": 1, "B1": 2, "B2": 2, "B3": 2}


def kai_cluster() -> list[Json]:
    made = []
    for rack, count in KAI_RACKS.items():
        for i in range(1, count + 1):
            labels = {ZONE: f"zone-{rack[0]}", RACK: f"rack-{rack}"}
            board = nodes.hgx(gpus=1, nics=1)
            made.append(nodes.node(f"node-{rack}-{i}", board, 1, {"rdma/hca": 1}, labels))
    return made


def test_kai_required_zone_preferred_rack_as_its_readme_places_it() -> None:
    job: Json = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "distributed-training",
            "annotations": {
                "kai.scheduler/topology": "cluster-topology",
                "kai.scheduler/topology-required-placement": "topology.kubernetes.io/zone",
                "kai.scheduler/topology-preferred-placement": "topology.kubernetes.io/rack",
            },
        },
    }
    gang, members = gang_members("distributed-training", 3, gpus=1)
    owners = {m["metadata"]["name"]: job for m in members}
    f = Fabric(kai_cluster(), GangSettings(), owners)
    assert f.place(gang, members) == ["node-A1-1", "node-A1-2", "node-A2-1"]
    assert f.planner.plans == {}, "bound whole"
    assert f.planner.history[-1].domain == "zone-A"


def test_kai_required_rack_for_three_waits_on_this_cluster_never_fits() -> None:
    job: Json = {
        "metadata": {
            "annotations": {
                "kai.scheduler/topology-required-placement": "topology.kubernetes.io/rack"
            }
        }
    }
    gang, members = gang_members("racked", 3, gpus=1)
    f = Fabric(kai_cluster(), GangSettings(), {m["metadata"]["name"]: job for m in members})
    assert f.place(gang, members) == (
        "gang team-a/racked requires 3 x (1 GPU, 1 rails) inside one topology.kubernetes.io/rack "
        "domain: the largest, rack-B3, holds 2 even with nothing else running; "
        "it can never be placed"
    )


def racks_of_four() -> list[Json]:
    made = []
    for rack in range(3):
        for i in range(4):
            labels = {"cloud.provider.com/topology-rack": f"rack-{rack}", ZONE: "zone-0"}
            made.append(nodes.node(f"n{rack}-{i}", nodes.hgx(), labels=labels))
    return made


def test_kueue_sample_job_required_is_refused_when_no_rack_holds_it() -> None:
    annotations = {"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}
    gang, members = gang_members("tas-sample-required", 10, annotations=annotations)
    f = Fabric(racks_of_four(), GangSettings())
    assert f.place(gang, members) == (
        "gang team-a/tas-sample-required requires 10 x (8 GPU, 8 rails) inside one "
        "cloud.provider.com/topology-rack domain: the largest, rack-2, holds 4 even with "
        "nothing else running; it can never be placed"
    )


def test_pods_kueue_placed_are_planned_inside_its_assignment() -> None:
    """Kueue's assignment: 3 pods in rack-0, 3 in rack-2 (node selectors it injected after
    removing its kueue.x-k8s.io/topology gate); the template's annotation asks one rack."""
    annotations = {"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}
    gang, members = gang_members(
        "tas-job", 6, annotations=annotations, labels={"kueue.x-k8s.io/tas": "true"}
    )
    for i, member in enumerate(members):
        rack = "rack-0" if i < 3 else "rack-2"
        member["spec"]["nodeSelector"] = {"cloud.provider.com/topology-rack": rack}
    f = Fabric(racks_of_four(), GangSettings())
    placed = f.place(gang, members)
    assert isinstance(placed, list)
    assert [node[:2] for node in placed] == ["n0", "n0", "n0", "n2", "n2", "n2"]
