"""Device taints, DeviceTaintRules and counters as the node's view and the allocator read
them (kube_rdma/core/dra/taints.py, counters.py), beyond Kubernetes' own table
(upstream/allocator_cases_taints.py): what validation refuses is refused with its field and
reason and hides none of the node's other slices (k8s.io/kubernetes pkg/apis/resource/
validation: a taint's effect is one of NoSchedule, NoExecute, None); a pool whose device
consumes from a counter set it does not have is invalid (structured/internal/stable/
pools_stable.go validateDeviceCounterConsumption); and a refusal names the taint."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.gates import Gates
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.objects import Json
from tests.kube_rdma.core.dra.fixtures import (
    NIC_CLASS,
    claim,
    exactly,
    gpu_slice,
    nic,
    nic_slice,
    pod,
    slice_,
)

UNHEALTHY = {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
NIC0 = "pci-0000-20-00-0"


def _rule(name: str, taint: Json, **selector: str) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": selector, "taint": taint},
    }


def _tainted_nic(index: int, *taints: Json) -> Json:
    return {**nic(index), "taints": list(taints)}


def _nic_claim(count: int = 1, tolerations: list[Json] | None = None) -> Json:
    request = exactly("nic", NIC_CLASS["metadata"]["name"], count)
    if tolerations is not None:
        request["exactly"]["tolerations"] = tolerations
    return claim("nics", [request])


def _allocate(index: DraIndex, node: str, obj: Json) -> Allocation | Refusal:
    index.upsert_class(NIC_CLASS)
    index.upsert_claim(obj)
    selectors = Selectors()
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "nics"}]), index, selectors)
    assert not demand.problems
    return allocate(demand, node, index.node(node), selectors)


@pytest.mark.parametrize(
    ("device", "note"),
    [
        (
            _tainted_nic(0, {"key": "k", "effect": "Sometimes"}),
            "ResourceSlice n1-bad is refused: spec.devices[0].taints[0].effect 'Sometimes': "
            "Unsupported value (one of NoSchedule, NoExecute, None)",
        ),
        (
            _tainted_nic(0, {"effect": "NoSchedule"}),
            "ResourceSlice n1-bad is refused: spec.devices[0].taints[0].key: required",
        ),
        (
            {**nic(0), "consumesCounters": [{"counterSet": "s", "counters": {"m": {}}}]},
            "ResourceSlice n1-bad is refused: spec.devices[0].consumesCounters[0].counters[m]"
            ".value None: not a quantity",
        ),
    ],
)
def test_a_refused_taint_or_counter_refuses_its_slice_and_hides_no_other(
    device: Json, note: str
) -> None:
    index = DraIndex()
    index.replace_slices(
        [gpu_slice("n1"), nic_slice("n1"), slice_("n1-bad", "n1", "dra.net", [device], pool="x")]
    )
    node = index.node("n1")
    assert node is not None
    assert (node.count("gpu"), node.count("nic")) == (8, 8)
    assert note in node.notes


def test_a_device_consuming_from_an_unknown_counter_set_makes_its_pool_invalid() -> None:
    device = {**nic(0), "consumesCounters": [{"counterSet": "missing", "counters": {}}]}
    index = DraIndex()
    index.replace_slices([gpu_slice("n1"), slice_("n1-nic", "n1", "dra.net", [device])])
    node = index.node("n1")
    assert node is not None
    assert node.invalid == (
        (
            ("dra.net", "n1"),
            "pool n1 of dra.net is invalid: ResourceSlice n1-nic device pci-0000-20-00-0: "
            "consumesCounters[0].counterSet: counter set missing not found",
        ),
    )
    assert (node.count("gpu"), node.count("nic")) == (8, 0)


def test_a_device_consuming_more_than_its_set_has_is_noted_and_never_allocated() -> None:
    devices = [
        {**nic(0), "consumesCounters": [{"counterSet": "s", "counters": {"m": {"value": "2"}}}]},
    ]
    sets = slice_("n1-sets", "n1", "dra.net", [], count=2)
    sets["spec"]["sharedCounters"] = [{"name": "s", "counters": {"m": {"value": "1"}}}]
    obj = slice_("n1-nic", "n1", "dra.net", devices, count=2)
    index = DraIndex()
    index.replace_slices([obj, sets])
    node = index.node("n1")
    assert node is not None
    assert (
        f"device {NIC0} of pool n1 of dra.net can never be allocated: consumesCounters "
        "consumes 2 of counter m of counter set s, which has 1"
    ) in node.notes
    found = _allocate(index, "n1", _nic_claim())
    assert isinstance(found, Refusal)


def test_a_taint_rule_taints_the_device_it_names_and_the_refusal_names_it() -> None:
    index = DraIndex()
    index.replace_slices([nic_slice("n1", nics=1)])
    index.replace_taint_rules([_rule("n1-nic0", UNHEALTHY, driver="dra.net", device=NIC0)])
    node = index.node("n1")
    assert node is not None
    assert node.count("nic") == 0
    assert (
        f"device {NIC0} of pool n1 of dra.net is tainted "
        "kube-rdma.io/rdma-unhealthy:NoSchedule (from DeviceTaintRule n1-nic0)"
    ) in node.notes
    found = _allocate(index, "n1", _nic_claim())
    assert found == Refusal(
        "claim default/nics request nic: 0 of 1 matching RDMA NIC(s) free, needs 1: "
        f"{NIC0} (pool n1 of dra.net) tainted kube-rdma.io/rdma-unhealthy:NoSchedule (from "
        "DeviceTaintRule n1-nic0), not tolerated",
        resolvable=False,
    )


def test_a_tolerated_taint_allocates_the_device() -> None:
    index = DraIndex()
    index.replace_slices([slice_("n1-nic", "n1", "dra.net", [_tainted_nic(0, UNHEALTHY)])])
    tolerate = [{"key": "kube-rdma.io/rdma-unhealthy", "operator": "Exists"}]
    found = _allocate(index, "n1", _nic_claim(tolerations=tolerate))
    assert found == Allocation({("default/nics", "nic"): (("dra.net", "n1", NIC0),)})


def test_with_the_gates_off_taints_and_rules_keep_nothing_off() -> None:
    index = DraIndex(gates=Gates.defaults(35))
    index.replace_slices([slice_("n1-nic", "n1", "dra.net", [_tainted_nic(0, UNHEALTHY)])])
    index.replace_taint_rules([_rule("all", UNHEALTHY)])
    node = index.node("n1")
    assert node is not None
    assert node.count("nic") == 1


@pytest.mark.parametrize(
    ("minor", "taints", "rules", "partitionable"),
    [
        (34, False, False, False),
        (35, False, False, False),
        (36, True, False, True),
        (37, True, True, True),
    ],
)
def test_gate_defaults_per_version(
    minor: int, taints: bool, rules: bool, partitionable: bool
) -> None:
    """kubernetes pkg/features/kube_features.go: DRADeviceTaints alpha 1.33, beta (on) 1.36,
    GA 1.37; DRADeviceTaintRules alpha 1.35, beta (off) 1.36, GA 1.37;
    DRAPartitionableDevices alpha 1.33, beta (on) 1.36; DRAConsumableCapacity and
    DRADeviceBindingConditions alpha 1.34, beta (on) 1.36."""
    later = minor >= 36
    assert Gates.defaults(minor) == Gates(taints, rules, partitionable, later, later)


def test_a_rule_by_class_or_without_selector_taints_nothing_and_says_why() -> None:
    index = DraIndex()
    index.replace_slices([nic_slice("n1", nics=1)])
    bad = _rule("by-class", UNHEALTHY)
    bad["spec"]["deviceSelector"] = {"deviceClassName": "dranet"}
    none = _rule("none", UNHEALTHY)
    del none["spec"]["deviceSelector"]
    index.replace_taint_rules([bad, none, _rule("bad-effect", {"key": "k", "effect": "Later"})])
    node = index.node("n1")
    assert node is not None
    assert node.count("nic") == 1
    assert index.taint_rules == {
        "by-class": "DeviceTaintRule by-class: spec.deviceSelector.deviceClassName: not "
        "evaluated (removed from the API in 1.35)",
        "none": "DeviceTaintRule none: spec.deviceSelector: none, so it selects no device",
        "bad-effect": "DeviceTaintRule bad-effect: spec.taint.effect 'Later': Unsupported "
        "value (one of NoSchedule, NoExecute, None)",
    }
