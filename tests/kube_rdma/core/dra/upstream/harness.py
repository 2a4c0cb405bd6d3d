"""Runs one translated allocator case through kube-rdma's reading of the objects
(kube_rdma/core/dra: DraIndex, pod_demand, allocate) and returns what upstream's allocator
returns in the same terms: the results per claim, NONE or ERROR. A result that shares its
device, or carries binding conditions, adds them in a sixth entry (builders_capacity.py)."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.gates import Gates
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import DeviceId
from kube_rdma.core.objects import Json
from tests.kube_rdma.core.dra.upstream.builders import ERROR, NONE, Case, Result
from tests.kube_rdma.core.dra.upstream.builders_capacity import GatedCase

NAMESPACE = "default"


def outcome(case: Case, minor: int, selectors: Selectors | None = None) -> Any:
    selectors = selectors or Selectors()
    gates = Gates.of(minor, case.features)
    index = DraIndex(gates=gates)
    # Upstream's table reuses slice names across pools; names matter to nothing but the
    # apiserver, so each slice gets its own here.
    slices = [copy.deepcopy(s) for s in case.slices]
    for i, obj in enumerate(slices):
        obj["metadata"]["name"] = f"{i}-{obj['metadata']['name']}"
    index.replace_slices(slices)
    for obj in case.classes:
        index.upsert_class(obj)
    names = []
    for i, obj in enumerate(case.claims):
        obj = copy.deepcopy(obj)
        obj["metadata"] = {"name": f"{i}-{obj['metadata']['name']}", "namespace": NAMESPACE}
        index.upsert_claim(obj)
        names.append(obj["metadata"]["name"])
    if case.allocated:
        index.upsert_claim(_holder(case.allocated, case.node))
    if isinstance(case, GatedCase) and case.shared:
        index.upsert_claim(_sharer(case.shared))
    pod: Json = {
        "metadata": {"name": "p", "namespace": NAMESPACE},
        "spec": {"resourceClaims": [{"name": n, "resourceClaimName": n} for n in names]},
    }
    demand = pod_demand(pod, index, selectors)
    if demand.problems:
        return ERROR
    found = allocate(demand, case.node, index.node(case.node), selectors, minor=minor, gates=gates)
    if isinstance(found, Refusal):
        return ERROR if found.error else NONE
    if not names:
        return NONE
    per_claim: list[list[Result]] = []
    for name in names:
        label = f"{NAMESPACE}/{name}"
        got: list[Result] = []
        for request in (r for r in demand.requests if r.claim == label):
            for (claim, picked), ids in found.devices.items():
                if claim != label or picked.partition("/")[0] != request.request:
                    continue
                sub = picked.partition("/")[2]
                choice = next(c for c in request.choices if c.subrequest == sub)
                got += [
                    (picked, *i, choice.admin_access, *_extra(found, claim, picked, i)) for i in ids
                ]
        per_claim.append(got)
    return per_claim


def _extra(found: Allocation, claim: str, picked: str, device: DeviceId) -> tuple[Any, ...]:
    extra: dict[str, Any] = {}
    consumed = found.shared.get((claim, picked, device))
    if consumed is not None:
        extra["shareID"] = True
        extra["consumedCapacity"] = {n: _amount(a) for n, a in consumed.items()}
    binding = found.binding.get(device)
    if binding is not None:
        extra["bindingConditions"] = list(binding.conditions)
        extra["bindingFailureConditions"] = list(binding.failures)
    return (extra,) if extra else ()


def _amount(amount: Decimal) -> str:
    return f"{amount.normalize():f}"


def _sharer(shared: dict[DeviceId, dict[str, str]]) -> Json:
    """A claim whose results share devices, consuming what upstream passes as
    `allocatedCapacityDevices`."""
    results = [
        {
            "request": "r",
            "driver": d,
            "pool": p,
            "device": n,
            "shareID": f"share-{i}",
            "consumedCapacity": consumed,
        }
        for i, ((d, p, n), consumed) in enumerate(shared.items())
    ]
    return {
        "metadata": {"name": "allocated-capacity", "namespace": NAMESPACE},
        "spec": {"devices": {"requests": []}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _holder(devices: list[tuple[str, str, str]], node: str) -> Json:
    """A claim allocated with the devices upstream passes as `allocatedDevices`."""
    results = [{"request": "r", "driver": d, "pool": p, "device": n} for d, p, n in devices]
    return {
        "metadata": {"name": "allocated-devices", "namespace": NAMESPACE},
        "spec": {"devices": {"requests": []}},
        "status": {"allocation": {"devices": {"results": results}}},
    }
