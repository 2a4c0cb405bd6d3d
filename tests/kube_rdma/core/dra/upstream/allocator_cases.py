"""Kubernetes' allocator test table, case by case: TestAllocator in
k8s.io/dynamic-resource-allocation structured/internal/allocatortesting/allocator_testing.go,
translated from v0.34.9 (Kubernetes 1.34.9, commit bf5dd065dee3baa9819013d591805cc78dd7be00)
and checked against release-1.35, release-1.36 and master (versions.py; a case the later
versions changed carries their outcome in `by_version`). Each entry is named as upstream names
it. `python -m testbed.upstream_dra --check REPO_DIR TAG` lists upstream cases missing here.

A case left out says why. The reasons:
- network-attached: slices for `allNodes` or a `nodeSelector`; kube-rdma reads node-local
  pools only.
- device taints, partitionable devices, consumable capacity and binding conditions (alpha or
  beta, off by default in 1.34) are translated in allocator_cases_taints.py and
  allocator_cases_capacity.py, each case with the feature gates it sets.
- config: the case checks the device configuration copied into the allocation result, which
  kube-rdma does not produce.
- feature gate off: the case turns off a gate that is on by default (DRAAdminAccess,
  DRAPrioritizedList); kube-rdma follows the default.
"""

from __future__ import annotations

from typing import Any

from tests.kube_rdma.core.dra.upstream.allocator_cases_capacity import CASES as CAPACITY_CASES
from tests.kube_rdma.core.dra.upstream.allocator_cases_taints import CASES as TAINT_CASES
from tests.kube_rdma.core.dra.upstream.builders import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    ERROR,
    INT_ATTRIBUTE,
    MISSING_ATTRIBUTE,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTRIBUTE,
    SUB0,
    SUB1,
    VERSION_ATTRIBUTE,
    Case,
    LeftOut,
    all_request,
    cel,
    claim,
    claim_with_requests,
    class_,
    device,
    many_devices,
    match,
    one_device,
    prioritized,
    request,
    result,
    results,
    slice_,
    sub_request,
)

TRANSLATED_FROM = "v0.34.9"
MAX = 32  # resourceapi.AllocationResultsMaxSize
A, B = class_(CLASS_A, DRIVER_A), class_(CLASS_B, DRIVER_B)
R0S0, R0S1, R1S0, R1S1 = (f"{r}/{s}" for r in (REQ0, REQ1) for s in (SUB0, SUB1))


def memory(at_least: str) -> dict[str, object]:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{at_least}")) >= 0')


def sized(name: str, amount: str, **attributes: dict[str, Any]) -> dict[str, Any]:
    return device(name, {"memory": amount}, dict(attributes) or None)


def version(value: str) -> dict[str, Any]:
    return {"version": value}


ALL_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "driverVersion": version("1.0.0"),
    "numa": {"int": 1},
    "stringAttribute": {"string": "stringAttributeValue"},
    "boolAttribute": {"bool": True},
}


def _admin(request_: dict[str, object]) -> dict[str, object]:
    exactly = dict(request_["exactly"])  # type: ignore[call-overload]
    exactly["adminAccess"] = True
    return {**request_, "exactly": exactly}


def _prioritized_all_first(name: str, first_class: str, second_class: str) -> dict[str, object]:
    first = sub_request(SUB0, first_class, 1)
    first["allocationMode"] = "All"
    del first["count"]
    return prioritized(name, first, sub_request(SUB1, second_class, 1))


_INVALID_POOL_BESIDE_POOL2 = [
    slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), resourceSliceCount=2),
    slice_(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE1), resourceSliceCount=2),
    slice_("slice-3", NODE1, POOL2, DRIVER_A, device(DEVICE2)),
]
_FOUR = [device(DEVICE1), device(DEVICE2), device(DEVICE3), device(f"device-{4}")]
_FOUR_DEVICES = {
    "single-pool-single-slice": [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *_FOUR)],
    "single-pool-multiple-slices": [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, *_FOUR[:2], resourceSliceCount=2),
        slice_(SLICE2, NODE1, POOL1, DRIVER_A, *_FOUR[2:], resourceSliceCount=2),
    ],
    "multiple-pools-multiple-slices": [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, _FOUR[0], resourceSliceCount=2),
        slice_(SLICE2, NODE1, POOL1, DRIVER_A, _FOUR[1], resourceSliceCount=2),
        slice_("slice-3", NODE1, POOL2, DRIVER_A, *_FOUR[2:]),
    ],
    "many-pools": [
        slice_(f"slice-{i + 1}", NODE1, f"pool-{i + 1}", DRIVER_A, d) for i, d in enumerate(_FOUR)
    ],
}


def _type(value: str) -> dict[str, object]:
    return cel(f'device.attributes["{DRIVER_A}"].type == "{value}"')


_XYY = [
    device(DEVICE1, None, {"type": {"string": "X"}}),
    device(DEVICE2, None, {"type": {"string": "Y"}}),
    device(DEVICE3, None, {"type": {"string": "Y"}}),
]


def _generation(name: str, value: str, **flags: bool) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {"generation": {"string": value}}
    attributes.update({k: {"bool": v} for k, v in flags.items()})
    return device(name, None, attributes)


def _generations() -> dict[str, object]:
    """firstAvailable of two `All` subrequests, the v6 devices first, then the v5 ones."""
    subs = []
    for sub, value in ((SUB0, "v6"), (SUB1, "v5")):
        found = sub_request(
            sub, CLASS_A, 0, cel(f'device.attributes["{DRIVER_A}"].generation == "{value}"')
        )
        found["allocationMode"] = "All"
        subs.append(found)
    return prioritized(REQ0, *subs)


_CASES: list[Case | LeftOut] = [
    Case("empty"),
    Case(
        "simple",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "other-node",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [A],
        [
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            one_device(SLICE2, NODE2, POOL2, DRIVER_A),
        ],
        node=NODE2,
        expect=[[result(REQ0, DRIVER_A, POOL2, DEVICE1)]],
    ),
    Case(
        "small-and-large",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 1, memory("1Gi")),
                request(REQ1, CLASS_A, 1, memory("2Gi")),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, "1Gi"), sized(DEVICE2, "2Gi"))],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "small-and-large-backtrack-requests",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 1, memory("1Gi")),
                request(REQ1, CLASS_A, 1, memory("2Gi")),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE2, "2Gi"), sized(DEVICE1, "1Gi"))],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "small-and-large-backtrack-claims",
        [
            claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1, memory("1Gi"))),
            claim_with_requests(CLAIM1, None, request(REQ1, CLASS_A, 1, memory("2Gi"))),
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE2, "2Gi"), sized(DEVICE1, "1Gi"))],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)], [result(REQ1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "devices-split-across-different-slices",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)]],
    ),
    Case(
        "obsolete-slice",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [A],
        [
            one_device("slice-1-obsolete", NODE1, POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL1, DRIVER_A, generation=2),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        by_version=dict.fromkeys(
            ("release-1.35", "release-1.36", "master"),
            Case(
                "obsolete-slice",
                [claim(CLAIM0, REQ0, CLASS_A)],
                [A],
                [
                    slice_(
                        "slice-1-obsolete",
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        device(DEVICE1),
                        resourceSliceCount=2,
                    ),
                    slice_(
                        "slice-1-obsolete",
                        NODE1,
                        POOL1,
                        DRIVER_A,
                        device(DEVICE2),
                        resourceSliceCount=2,
                        generation=2,
                    ),
                ],
            ),
        ),
    ),
    Case(
        "duplicate-slice",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [A],
        [
            one_device(SLICE1, NODE1, POOL1, DRIVER_A, resourceSliceCount=2),
            one_device("slice-1-2", NODE1, POOL1, DRIVER_A, resourceSliceCount=2),
        ],
        expect=ERROR,
    ),
    Case("no-slices", [claim(CLAIM0, REQ0, CLASS_A)], [A]),
    Case(
        "not-enough-suitable-devices",
        [claim(CLAIM0, REQ0, CLASS_A), claim(CLAIM0, REQ1, CLASS_A)],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    Case(
        "no-classes",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "unknown-class",
        [claim(CLAIM0, REQ0, "unknown-class")],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "empty-class",
        [claim(CLAIM0, REQ0, "")],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case("no-claims-to-allocate", [], [A], [one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    Case(
        "all-devices-single",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "all-devices-many",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)]],
    ),
    Case(
        "all-devices-of-the-incomplete-pool",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A, count=1))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A, resourceSliceCount=2)],
        expect=ERROR,
    ),
    Case(
        "all-devices-plus-another",
        [
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_B, 1)),
        ],
        [A, B],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)], [result(REQ0, DRIVER_B, POOL1, DEVICE1)]],
    ),
    Case(
        "all-devices-plus-another-reversed",
        [
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_B, 1)),
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
        ],
        [A, B],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[[result(REQ0, DRIVER_B, POOL1, DEVICE1)], [result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "all-devices-many-plus-another",
        [
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_B, 1)),
        ],
        [A, B],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            [result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)],
            [result(REQ0, DRIVER_B, POOL1, DEVICE1)],
        ],
    ),
    Case(
        "all-devices-many-plus-another-reversed",
        [
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_B, 1)),
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
        ],
        [A, B],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            [result(REQ0, DRIVER_B, POOL1, DEVICE1)],
            [result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)],
        ],
    ),
    Case(
        "all-devices-no-solution",
        [
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_A, 1)),
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
        ],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    Case(
        "all-devices-no-solution-reversed",
        [
            claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A)),
            claim_with_requests(CLAIM1, None, request(REQ0, CLASS_A, 1)),
        ],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    Case(
        "all-devices-slice-without-devices",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    Case(
        "all-devices-no-slices",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
    ),
    Case(
        "all-devices-some-allocated",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
    ),
    Case(
        "all-devices-some-allocated-admin-access",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A, adminAccess=True))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        expect=[
            [
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            ]
        ],
    ),
    Case(
        "all-devices-some-allocating-admin-access",
        [
            claim_with_requests(
                CLAIM0,
                None,
                _admin(request(REQ0, CLASS_A, 1)),
                all_request(REQ1, CLASS_A, adminAccess=True),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
    ),
    Case(
        "count-devices-some-allocated-admin-access",
        [claim_with_requests(CLAIM0, None, _admin(request(REQ0, CLASS_A, 2)))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        expect=[
            [
                result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, True),
            ]
        ],
    ),
    Case(
        "separate-claims-share-device-admin-access",
        [
            claim_with_requests(CLAIM0, None, _admin(request(REQ0, CLASS_A, 1))),
            claim_with_requests(CLAIM1, None, _admin(request(REQ0, CLASS_A, 1))),
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            [result(REQ0, DRIVER_A, POOL1, DEVICE1, True)],
            [result(REQ0, DRIVER_A, POOL1, DEVICE1, True)],
        ],
    ),
    Case(
        "admin-access-claims-device-allocating-for-non-admin-access",
        [
            claim(CLAIM0, REQ0, CLASS_A),
            claim_with_requests(CLAIM1, None, _admin(request(REQ0, CLASS_A, 1))),
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[
            [result(REQ0, DRIVER_A, POOL1, DEVICE1)],
            [result(REQ0, DRIVER_A, POOL1, DEVICE1, True)],
        ],
    ),
    Case(
        "all-devices-slice-without-devices-prioritized-list",
        [claim_with_requests(CLAIM0, None, _prioritized_all_first(REQ0, CLASS_A, CLASS_B))],
        [A, B],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[[result(R0S1, DRIVER_B, POOL2, DEVICE1)]],
    ),
    Case(
        "all-devices-no-slices-prioritized-list",
        [claim_with_requests(CLAIM0, None, _prioritized_all_first(REQ0, CLASS_A, CLASS_B))],
        [A, B],
        [one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[[result(R0S1, DRIVER_B, POOL2, DEVICE1)]],
    ),
    Case(
        "all-devices-some-allocated-prioritized-list",
        [claim_with_requests(CLAIM0, None, _prioritized_all_first(REQ0, CLASS_A, CLASS_B))],
        [A, B],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        expect=[[result(R0S1, DRIVER_B, POOL2, DEVICE1)]],
    ),
    LeftOut("network-attached-device", "network-attached: a slice for a nodeSelector"),
    LeftOut("unsuccessful-allocation-network-attached-device", "network-attached"),
    LeftOut("many-network-attached-devices", "network-attached"),
    LeftOut("local-and-network-attached-devices", "network-attached"),
    Case(
        "several-different-drivers",
        [claim(CLAIM0, REQ0, CLASS_A), claim(CLAIM0, REQ0, CLASS_B)],
        [A, B],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)], [result(REQ0, DRIVER_B, POOL1, DEVICE1)]],
    ),
    Case(
        "already-allocated-devices",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
    ),
    LeftOut("admin-access-disabled", "feature gate off: DRAAdminAccess"),
    Case(
        "admin-access-enabled",
        [claim_with_requests(CLAIM0, None, _admin(request(REQ0, CLASS_A, 1)))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1, True)]],
    ),
    Case(
        "with-constraint",
        [
            claim_with_requests(
                CLAIM0,
                [
                    match(INT_ATTRIBUTE),
                    match(VERSION_ATTRIBUTE),
                    match(STRING_ATTRIBUTE),
                    match(BOOL_ATTRIBUTE),
                ],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ],
        [A],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, ALL_ATTRIBUTES),
                device(DEVICE2, None, ALL_ATTRIBUTES),
            )
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "with-constraint-non-existent-attribute",
        [claim(CLAIM0, REQ0, CLASS_A, match(MISSING_ATTRIBUTE))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    Case(
        "with-constraint-not-matching-int-attribute",
        [claim_with_requests(CLAIM0, [match(INT_ATTRIBUTE)], request(REQ0, CLASS_A, 2))],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": {"int": 1}}),
                device(DEVICE2, None, {"numa": {"int": 2}}),
            )
        ],
    ),
    Case(
        "with-constraint-not-matching-int-attribute-all-devices",
        [claim_with_requests(CLAIM0, [match(INT_ATTRIBUTE)], all_request(REQ0, CLASS_A))],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"numa": {"int": 1}}),
                device(DEVICE2, None, {"numa": {"int": 2}}),
            )
        ],
        expect=ERROR,
    ),
    Case(
        "with-constraint-not-matching-string-attribute",
        [claim_with_requests(CLAIM0, [match(STRING_ATTRIBUTE)], request(REQ0, CLASS_A, 2))],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"stringAttribute": {"string": "stringAttributeValue"}}),
                device(DEVICE2, None, {"stringAttribute": {"string": "stringAttributeValue2"}}),
            )
        ],
    ),
    Case(
        "with-constraint-not-matching-bool-attribute",
        [claim_with_requests(CLAIM0, [match(BOOL_ATTRIBUTE)], request(REQ0, CLASS_A, 2))],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"boolAttribute": {"bool": True}}),
                device(DEVICE2, None, {"boolAttribute": {"bool": False}}),
            )
        ],
    ),
    Case(
        "with-constraint-not-matching-version-attribute",
        [claim_with_requests(CLAIM0, [match(VERSION_ATTRIBUTE)], request(REQ0, CLASS_A, 2))],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"driverVersion": version("1.0.0")}),
                device(DEVICE2, None, {"driverVersion": version("2.0.0")}),
            )
        ],
    ),
    Case(
        "with-constraint-for-request",
        [
            claim_with_requests(
                CLAIM0,
                [match(VERSION_ATTRIBUTE, REQ0)],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, {"driverVersion": version("1.0.0")}),
                device(DEVICE2, None, {"driverVersion": version("2.0.0")}),
            )
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "with-constraint-for-request-retry",
        [
            claim_with_requests(
                CLAIM0,
                [match(VERSION_ATTRIBUTE, REQ0), match(STRING_ATTRIBUTE)],
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
            )
        ],
        [A, B],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1,
                    None,
                    {"driverVersion": version("1.0.0"), "stringAttribute": {"string": "a"}},
                ),
                device(
                    DEVICE2,
                    None,
                    {"driverVersion": version("2.0.0"), "stringAttribute": {"string": "b"}},
                ),
                device(
                    DEVICE3,
                    None,
                    {"driverVersion": version("3.0.0"), "stringAttribute": {"string": "b"}},
                ),
            )
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3)]],
    ),
    LeftOut("with-class-device-config", "config: the class's configuration in the result"),
    LeftOut("with-class-device-config-with-multiple-request-and-configs", "config"),
    LeftOut("claim-with-device-config", "config"),
    Case(
        "unknown-selector",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1, {}))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "unknown-allocation-mode",
        [
            claim_with_requests(
                CLAIM0, None, request(REQ0, CLASS_A, 1, allocationMode="future-mode")
            )
        ],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "unknown-constraint",
        [claim(CLAIM0, REQ0, CLASS_A, {})],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "invalid-CEL-one-device",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1, cel("noSuchVar")))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "invalid-CEL-one-device-class",
        [claim(CLAIM0, REQ0, CLASS_A)],
        [{**A, "spec": {"selectors": [cel("noSuchVar")]}}],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "invalid-CEL-all-devices",
        [
            claim_with_requests(
                CLAIM0, None, all_request(REQ0, CLASS_A, selectors=[cel("noSuchVar")])
            )
        ],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
    ),
    Case(
        "too-many-devices-single-request",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 500))],
        [A],
        expect=ERROR,
    ),
    Case(
        "many-devices-okay", [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, MAX))], [A]
    ),
    Case(
        "too-many-devices-total",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, MAX), request(REQ1, CLASS_A, 1))],
        [A],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX + 1)],
        expect=ERROR,
    ),
    Case(
        "all-devices-invalid-CEL",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 500))],
        [A],
        expect=ERROR,
    ),
    Case(
        "prioritized-list-first-unavailable",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)),
            )
        ],
        [A, B],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "prioritized-list-non-available",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(REQ0, sub_request(SUB0, CLASS_B, 2), sub_request(SUB1, CLASS_A, 2)),
            )
        ],
        [A, B],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_B)],
    ),
    LeftOut("prioritized-list-device-config", "config"),
    LeftOut("prioritized-list-class-config", "config"),
    Case(
        "prioritized-list-subrequests-with-expressions",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 1, memory("1Gi")),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, memory("4Gi")),
                    sub_request(SUB1, CLASS_A, 2, memory("2Gi")),
                ),
            )
        ],
        [A],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                sized(DEVICE1, "2Gi"),
                sized(DEVICE2, "2Gi"),
                sized(DEVICE3, "1Gi"),
            )
        ],
        expect=[
            [
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(R1S1, DRIVER_A, POOL1, DEVICE1),
                result(R1S1, DRIVER_A, POOL1, DEVICE2),
            ]
        ],
    ),
    Case(
        "prioritized-list-subrequests-with-constraints-ref-parent-request",
        [
            claim_with_requests(
                CLAIM0,
                [match(VERSION_ATTRIBUTE, REQ0, REQ1)],
                request(REQ0, CLASS_A, 1, memory("8Gi")),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, memory("2Gi")),
                    sub_request(SUB1, CLASS_A, 1, memory("1Gi")),
                ),
            )
        ],
        [A],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                sized(DEVICE1, "8Gi", driverVersion=version("1.0.0")),
            ),
            slice_(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                sized(DEVICE2, "2Gi", driverVersion=version("2.0.0")),
                sized(DEVICE3, "1Gi", driverVersion=version("1.0.0")),
            ),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE3)]],
    ),
    Case(
        "prioritized-list-subrequests-with-constraints-ref-sub-request",
        [
            claim_with_requests(
                CLAIM0,
                [match(VERSION_ATTRIBUTE, REQ0, R1S0)],
                request(REQ0, CLASS_A, 1, memory("8Gi")),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, memory("2Gi")),
                    sub_request(SUB1, CLASS_A, 1, memory("1Gi")),
                ),
            )
        ],
        [A],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                sized(DEVICE1, "8Gi", driverVersion=version("1.0.0")),
            ),
            slice_(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                sized(DEVICE2, "2Gi", driverVersion=version("2.0.0")),
            ),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL2, DEVICE2)]],
    ),
    Case(
        "prioritized-list-subrequests-with-allocation-mode-all",
        [claim_with_requests(CLAIM0, None, _prioritized_all_first(REQ0, CLASS_A, CLASS_A))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        "prioritized-list-allocation-mode-all-multiple-requests",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 1),
                _prioritized_all_first(REQ1, CLASS_A, CLASS_A),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE2)]],
    ),
    LeftOut("prioritized-list-disabled", "feature gate off: DRAPrioritizedList"),
    Case(
        "prioritized-list-multi-request",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ1, CLASS_A, 1, memory("8Gi")),
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, memory("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, memory("4Gi")),
                ),
            )
        ],
        [A],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi")),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, sized(DEVICE2, "4Gi")),
        ],
        expect=[[result(REQ1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE2)]],
    ),
    Case(
        "prioritized-list-with-backtracking",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1, memory("8Gi")),
                    sub_request(SUB1, CLASS_A, 1, memory("4Gi")),
                ),
                request(REQ1, CLASS_A, 1, memory("8Gi")),
            )
        ],
        [A],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, sized(DEVICE1, "8Gi")),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, sized(DEVICE2, "4Gi")),
        ],
        expect=[[result(R0S1, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "prioritized-list-too-many-in-first-subrequest",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(REQ0, sub_request(SUB0, CLASS_B, 500), sub_request(SUB1, CLASS_A, 1)),
            )
        ],
        [A, B],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "prioritized-list-allocation-mode-all",
        [claim_with_requests(CLAIM0, None, _prioritized_all_first(REQ0, CLASS_A, CLASS_A))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "max-number-devices",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, MAX))],
        [A],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX)],
        expect=[results(REQ0, DRIVER_A, POOL1, MAX)],
    ),
    Case(
        "prioritized-list-max-allocation-limit-request",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(
                    REQ0, sub_request(SUB0, CLASS_A, MAX), sub_request(SUB1, CLASS_A, MAX // 2)
                ),
                prioritized(
                    REQ1, sub_request(SUB0, CLASS_A, MAX), sub_request(SUB1, CLASS_A, MAX // 2)
                ),
            )
        ],
        [A],
        [many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX * 2)],
        expect=[
            results(R0S1, DRIVER_A, POOL1, MAX // 2)
            + results(R1S1, DRIVER_A, POOL1, MAX // 2, MAX // 2)
        ],
    ),
    Case(
        "prioritized-list-max-allocation-allocation-mode-all",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(
                    REQ0,
                    {"name": SUB0, "allocationMode": "All", "deviceClassName": CLASS_A},
                    sub_request(SUB1, CLASS_A, 2),
                ),
                request(REQ1, CLASS_B, 2),
            )
        ],
        [A, B],
        [
            many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX - 1),
            many_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2),
        ],
        expect=[
            [
                result(R0S1, DRIVER_A, POOL1, DEVICE0),
                result(R0S1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE0),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
            ]
        ],
    ),
    # Added in release-1.35.
    Case(
        "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))],
        [A],
        _INVALID_POOL_BESIDE_POOL2,
        expect=[[result(REQ0, DRIVER_A, POOL2, DEVICE2)]],
    ),
    Case(
        "invalid-pool-is-error-if-no-other-device-can-be-allocated",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))],
        [A],
        _INVALID_POOL_BESIDE_POOL2,
        allocated=[(DRIVER_A, POOL2, DEVICE2)],
        expect=ERROR,
    ),
    Case(
        "no-allocation-from-incomplete-pools",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 1))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), resourceSliceCount=2)],
    ),
    # Added in release-1.36.
    *(
        Case(
            f"check-combinations-within-single-request-{name}",
            [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 5))],
            [A],
            slices,
        )
        for name, slices in _FOUR_DEVICES.items()
    ),
    Case(
        "check-combinations-with-backtracking",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ1, CLASS_A, 2),
                request(REQ2, CLASS_A, 1, _type("X")),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *_XYY)],
        expect=[
            [
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            ]
        ],
    ),
    Case(
        "check-combinations-with-prioritized-list",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(
                    REQ1, sub_request(SUB0, CLASS_A, 3, _type("Y")), sub_request(SUB1, CLASS_A, 2)
                ),
                prioritized(
                    REQ2, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_A, 1, _type("X"))
                ),
            )
        ],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *_XYY)],
        expect=[
            [
                result(R1S1, DRIVER_A, POOL1, DEVICE2),
                result(R1S1, DRIVER_A, POOL1, DEVICE3),
                result(f"{REQ2}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
            ]
        ],
    ),
    Case(
        "prioritized-list-allocation-mode-all-with-selectors",
        [claim_with_requests(CLAIM0, None, _generations())],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, _generation(DEVICE1, "v5"))],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "prioritized-list-allocation-mode-all-with-selectors-multiple-pools",
        [claim_with_requests(CLAIM0, None, _generations())],
        [A],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, _generation(DEVICE1, "v5")),
            slice_(SLICE2, NODE1, POOL2, DRIVER_A, _generation(DEVICE1, "v5")),
        ],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1), result(R0S1, DRIVER_A, POOL2, DEVICE1)]],
    ),
    Case(
        "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes",
        [claim_with_requests(CLAIM0, None, _generations())],
        [A],
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, _generation(DEVICE1, "v5")),
            slice_(
                SLICE2,
                NODE2,
                POOL2,
                DRIVER_A,
                _generation(DEVICE1, "v5"),
                _generation(DEVICE2, "v6"),
            ),
        ],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    Case(
        "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset",
        [claim_with_requests(CLAIM0, None, _generations())],
        [
            {
                **A,
                "spec": {
                    "selectors": [
                        cel(
                            f'device.driver == "{DRIVER_A}" && '
                            f'device.attributes["{DRIVER_A}"].selected'
                        )
                    ]
                },
            }
        ],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _generation(DEVICE1, "v6", selected=False),
                _generation(DEVICE2, "v5", selected=False),
                _generation(DEVICE3, "v5", selected=True),
            )
        ],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE3)]],
    ),
]

_PREFIXES = {
    "multi-host-resource-pool-": "multi-host pools: one pool's slices on several nodes",
    "allocation-mode-all-with-multi-host-resource-pool": "multi-host pools",
    "different-resourceslices-in-pool-can-target-different-nodes": "multi-host pools",
    "list-attributes-": "list-typed attributes (DRAListTypeAttributes, alpha in 1.36)",
    "with-claim-config-for-two-requests": "config",
    "claim-config-": "config",
}


def left_out_by_prefix(name: str) -> LeftOut | None:
    for prefix, why in _PREFIXES.items():
        if name.startswith(prefix):
            return LeftOut(name, why)
    return None


CASES: dict[str, Case | LeftOut] = {c.name: c for c in _CASES} | CAPACITY_CASES | TAINT_CASES
