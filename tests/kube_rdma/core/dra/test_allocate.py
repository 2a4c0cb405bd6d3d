"""Claim constraints, searched as kube-scheduler's allocator searches
(k8s.io/dynamic-resource-allocation/structured, internal/stable/allocator_stable.go allocateOne
and matchAttributeConstraint; internal/experimental/constraint.go distinctAttributeConstraint)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from tests.kube_rdma.core.dra.fixtures import (
    GPU_CLASS,
    NIC_CLASS,
    claim,
    exactly,
    gpu,
    nic,
    pod,
    slice_,
)

ROOT = "resource.kubernetes.io/pcieRoot"
GPU, NIC = "gpu.nvidia.com", "dra.net"


def node(nic_roots: list[int], gpu_roots: list[int] | None = None) -> DraIndex:
    """Node n1: 8 GPUs (under roots `gpu_roots`, by default two per root in index order) and
    8 dranet NICs under `nic_roots`, in the slice order given."""
    gpus = [gpu(i) for i in range(8)]
    for i, root in enumerate(gpu_roots or []):
        gpus[i]["attributes"][ROOT] = {"string": f"pci0000:{root:02x}"}
    index = DraIndex()
    index.replace_slices(
        [
            slice_("n1-gpu", "n1", GPU, gpus),
            slice_("n1-nic", "n1", NIC, [nic(i, root=r) for i, r in enumerate(nic_roots)]),
        ]
    )
    index.upsert_class(GPU_CLASS)
    index.upsert_class(NIC_CLASS)
    return index


# dranet lists the NICs in its own order: here the NICs of the last root come first.
REVERSED = [3, 3, 2, 2, 1, 1, 0, 0]


def pairs(count: int, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    requests = [
        exactly(f"{kind}-{i}", cls)
        for i in range(count)
        for kind, cls in (("gpu", "gpu.nvidia.com"), ("nic", "dranet"))
    ]
    return claim("pairs", requests, constraints=constraints)


def per_pair(count: int) -> list[dict[str, Any]]:
    return [{"matchAttribute": ROOT, "requests": [f"gpu-{i}", f"nic-{i}"]} for i in range(count)]


def run(index: DraIndex, obj: dict[str, Any], limit: int | None = None) -> Allocation | Refusal:
    index.upsert_claim(obj)
    selectors = Selectors()
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "pairs"}]), index, selectors)
    assert demand.problems == ()
    if limit is None:
        return allocate(demand, "n1", index.node("n1"), selectors)
    return allocate(demand, "n1", index.node("n1"), selectors, limit)


def nic_id(i: int) -> tuple[str, str, str]:
    return NIC, "n1", f"pci-0000-{0x20 + i:02x}-00-0"


def test_each_gpu_gets_a_nic_under_its_own_pcie_root() -> None:
    """First fit alone would give gpu-0 (root 0) the first NIC listed (root 3)."""
    found = run(node(REVERSED), pairs(8, per_pair(8)))
    nics = [6, 7, 4, 5, 2, 3, 0, 1]  # the NICs of roots 0, 0, 1, 1, 2, 2, 3, 3
    expected: dict[tuple[str, str], tuple[tuple[str, str, str], ...]] = {}
    for i in range(8):
        expected["default/pairs", f"gpu-{i}"] = ((GPU, "n1", f"gpu-{i}"),)
        expected["default/pairs", f"nic-{i}"] = (nic_id(nics[i]),)
    assert found == Allocation(expected)


def test_the_search_backtracks_to_an_earlier_gpu() -> None:
    """gpu-0 takes gpu-0 first, whose root (0) has no NIC; the search goes back and gives
    gpu-0 the next GPU, on root 1, as the allocator does."""
    found = run(node([1, 1, 2, 2, 3, 3, 3, 3]), pairs(2, per_pair(2)))
    assert found == Allocation(
        {
            ("default/pairs", "gpu-0"): ((GPU, "n1", "gpu-2"),),
            ("default/pairs", "nic-0"): (nic_id(0),),
            ("default/pairs", "gpu-1"): ((GPU, "n1", "gpu-3"),),
            ("default/pairs", "nic-1"): (nic_id(1),),
        }
    )


def test_one_constraint_over_sixteen_devices_on_a_two_root_node_is_refused() -> None:
    found = run(
        node([i // 4 for i in range(8)], [i // 4 for i in range(8)]),
        pairs(8, [{"matchAttribute": ROOT}]),
    )
    assert found == Refusal(
        "claim default/pairs: constraint matchAttribute resource.kubernetes.io/pcieRoot over "
        "all requests of the claim cannot be met by the node's devices",
        resolvable=False,
    )


def test_a_constraint_that_freeing_devices_would_meet_is_resolvable() -> None:
    index = node(REVERSED)
    held = [nic_id(i) for i in (4, 5, 6, 7)] + [(GPU, "n1", f"gpu-{i}") for i in range(4, 8)]
    index.upsert_claim(claim("other", [], allocated=held))
    assert run(index, pairs(2, per_pair(2))) == Refusal(
        "claim default/pairs: constraint matchAttribute resource.kubernetes.io/pcieRoot over "
        "gpu-0, nic-0 cannot be met by the node's free devices",
        resolvable=True,
    )


def test_a_device_without_the_attribute_fails_the_constraint() -> None:
    index = node(REVERSED)
    bare = [nic(i) for i in range(8)]
    for device in bare:
        del device["attributes"][ROOT]
    index.upsert_slice(slice_("n1-nic", "n1", NIC, bare))
    assert run(index, pairs(1, per_pair(1))) == Refusal(
        "claim default/pairs: constraint matchAttribute resource.kubernetes.io/pcieRoot over "
        "gpu-0, nic-0 cannot be met by the node's devices",
        resolvable=False,
    )


def test_distinct_attribute_spreads_a_request_over_roots() -> None:
    obj = claim(
        "pairs",
        [exactly("g", "gpu.nvidia.com", 3)],
        constraints=[{"distinctAttribute": ROOT, "requests": ["g"]}],
    )
    assert run(node(REVERSED), obj) == Allocation(
        {("default/pairs", "g"): tuple((GPU, "n1", f"gpu-{i}") for i in (0, 2, 4))}
    )


def test_a_constraint_may_name_one_first_available_choice() -> None:
    request = {
        "name": "g",
        "firstAvailable": [
            {"name": "nine", "deviceClassName": "gpu.nvidia.com", "count": 9},
            {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2},
        ],
    }
    obj = claim(
        "pairs",
        [request, exactly("n", "dranet")],
        constraints=[{"matchAttribute": ROOT, "requests": ["g/two", "n"]}],
    )
    assert run(node(REVERSED), obj) == Allocation(
        {
            ("default/pairs", "g/two"): ((GPU, "n1", "gpu-0"), (GPU, "n1", "gpu-1")),
            ("default/pairs", "n"): (nic_id(6),),
        }
    )


def test_the_search_gives_up_past_its_bound_as_unresolvable() -> None:
    assert run(node(REVERSED), pairs(8, per_pair(8)), limit=5) == Refusal(
        "gave up after trying 5 devices for the pod's claims (kube-scheduler's "
        "DynamicResources filter gives up on its timeout too)",
        resolvable=False,
        error=True,
    )


def test_a_selector_that_fails_on_a_device_the_search_reaches_refuses_the_node() -> None:
    broken = 'device.attributes["gpu.nvidia.com"].missing == 1'
    obj = claim("pairs", [exactly("g", "gpu.nvidia.com", 1, broken)])
    assert run(node(REVERSED), obj) == Refusal(
        "claim default/pairs request g: on device gpu-0 (pool n1 of gpu.nvidia.com): CEL "
        f"selector {broken!r} fails: no such member in mapping: 'missing'",
        resolvable=False,
        error=True,
    )


@pytest.mark.parametrize(
    ("constraint", "problem"),
    [
        (
            {"matchAttribute": ROOT, "requests": ["gpu-0", "nic-9"]},
            "claim default/pairs constraint #0 (resource.kubernetes.io/pcieRoot): 'nic-9' is "
            "not a request of the claim (its requests: gpu-0, nic-0)",
        ),
        (
            {"requests": ["gpu-0"]},
            "claim default/pairs constraint #0: set exactly one of matchAttribute and "
            "distinctAttribute",
        ),
        (
            {"matchAttribute": "pcieRoot"},
            "claim default/pairs constraint #0: 'pcieRoot' is not a fully qualified attribute "
            "name (domain/id)",
        ),
    ],
)
def test_a_constraint_that_cannot_be_read_is_a_problem(
    constraint: dict[str, Any], problem: str
) -> None:
    index = node(REVERSED)
    index.upsert_claim(pairs(1, [constraint]))
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "pairs"}]), index, Selectors())
    assert demand.problems == (problem,)
    assert demand.constraints == ()


def test_a_node_one_nic_short_is_refused_with_the_request_first_fit_cannot_meet() -> None:
    index = node(REVERSED)
    index.upsert_claim(claim("other", [], allocated=[nic_id(6)]))
    assert run(index, pairs(8, per_pair(8))) == Refusal(
        "claim default/pairs request nic-7: 0 of 8 matching RDMA NIC(s) free, needs 1",
        resolvable=True,
    )


def test_the_shipped_example_template_gets_each_gpu_a_nic_under_its_root() -> None:
    """manifests/examples/dra: 8 GPU-NIC pairs, a pcieRoot constraint per pair."""
    examples = Path(__file__).resolve().parents[4] / "manifests" / "examples" / "dra"
    index = node(REVERSED)
    for name in ("deviceclass.yaml", "resourceclaimtemplate.yaml"):
        for obj in yaml.safe_load_all((examples / name).read_text()):
            obj["metadata"]["namespace"] = "default"
            (
                index.upsert_template
                if obj["kind"] == "ResourceClaimTemplate"
                else index.upsert_class
            )(obj)
    (template,) = index.templates.values()
    label = f"default/{template['metadata']['name']}"
    selectors = Selectors()
    entry = {"name": "c", "resourceClaimTemplateName": template["metadata"]["name"]}
    demand = pod_demand(pod("p", [entry]), index, selectors)
    found = allocate(demand, "n1", index.node("n1"), selectors)
    nics = [6, 7, 4, 5, 2, 3, 0, 1]
    assert isinstance(found, Allocation)
    assert [found.devices[label, f"nic-{i}"] for i in range(8)] == [(nic_id(n),) for n in nics]
    assert [found.devices[label, f"gpu-{i}"] for i in range(8)] == [
        ((GPU, "n1", f"gpu-{i}"),) for i in range(8)
    ]


def test_constraints_that_fit_alone_but_not_together_are_named_together() -> None:
    obj = claim(
        "pairs",
        [exactly("g", "gpu.nvidia.com", 2)],
        constraints=[
            {"matchAttribute": ROOT, "requests": ["g"]},
            {"distinctAttribute": ROOT, "requests": ["g"]},
        ],
    )
    assert run(node(REVERSED), obj) == Refusal(
        "constraints cannot all be met together by the node's devices: default/pairs: "
        "matchAttribute resource.kubernetes.io/pcieRoot over g; default/pairs: "
        "distinctAttribute resource.kubernetes.io/pcieRoot over g",
        resolvable=False,
    )
