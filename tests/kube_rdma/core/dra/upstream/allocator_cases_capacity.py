"""Kubernetes' allocator test table, the cases of consumable capacity (DRAConsumableCapacity),
multi-allocatable devices and their distinctAttribute constraints, and binding conditions
(DRADeviceBindingConditions): TestAllocator in k8s.io/dynamic-resource-allocation
structured/internal/allocatortesting/allocator_testing.go, translated from master (commit
3d036712930cdac0b0d46c4c21316a78147c551f), identical in release-1.35 and release-1.36, and
checked against v0.34.9 (versions.py), whose outcome differs where `by_version` says. Each
entry is named as upstream names it, and runs with the feature gates its upstream case sets
(`features`).
"""

from __future__ import annotations

from typing import Any

from tests.kube_rdma.core.dra.upstream.allocator_cases_taints import (
    CS1,
    CS2,
    LATER,
    consumes,
    counter_set,
    memory,
    part,
    sets_slice,
    with_sets,
)
from tests.kube_rdma.core.dra.upstream.builders import (
    BOOL_ATTRIBUTE,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    ERROR,
    INT_ATTRIBUTE,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    REQ3,
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
    claim_with_requests,
    class_,
    device,
    match,
    one_device,
    prioritized,
    request,
    slice_,
    sub_request,
)
from tests.kube_rdma.core.dra.upstream.builders_capacity import (
    BINDING,
    CAPACITY,
    CAPACITY0,
    CAPACITY1,
    FOUR,
    NEITHER,
    ONE,
    THREE,
    TWO,
    ZERO,
    GatedCase,
    binding,
    bound,
    class_multi,
    multi,
    plain,
    policy_range,
    policy_values,
    shared,
    with_capacity,
)

A = class_(CLASS_A, DRIVER_A)
A_MULTI, A_DEDICATED = class_multi(CLASS_A, DRIVER_A, True), class_multi(CLASS_A, DRIVER_A, False)
DEVICE4 = "device-4"
ID1 = (DRIVER_A, POOL1, DEVICE1)
PREPARE, FAILED = ["IsPrepare"], ["BindingFailed"]


def claim(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return claim_with_requests(name, None, *requests)


def asks(amount: str | None, count: int = 1, name: str = REQ0) -> dict[str, Any]:
    """deviceRequest(name, classA, count).withCapacityRequest(amount)."""
    return with_capacity(request(name, CLASS_A, count), amount)


def on_node(*devices: dict[str, Any], **pool_fields: Any) -> list[dict[str, Any]]:
    return [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices, **pool_fields)]


def dev(name: str, capacity: dict[str, str] | None = None, **attributes: Any) -> dict[str, Any]:
    return device(name, capacity, dict(attributes) or None)


def ranged(name: str, value: str, **attributes: Any) -> dict[str, Any]:
    """device(name).withAllowMultipleAllocations().withCapacityRequestPolicyRange(value)."""
    return policy_range(multi(dev(name, None, **attributes)), {CAPACITY0: value})


def taking(name: str, amount: str | None) -> Any:
    consumed = {} if amount is None else {CAPACITY0: amount}
    return shared(REQ0, DRIVER_A, POOL1, name, consumed)


def distinct(attribute: str, *requests: str) -> dict[str, Any]:
    found: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        found["requests"] = list(requests)
    return found


def _bool_selector() -> dict[str, Any]:
    return cel(f'device.attributes["{DRIVER_A}"].boolAttribute')


def _boolean_first(name: str) -> dict[str, Any]:
    return prioritized(
        name, sub_request(SUB0, CLASS_A, 1, _bool_selector()), sub_request(SUB1, CLASS_A, 1)
    )


_DISTINCT_DEVICES = [
    multi(
        dev(
            name,
            None,
            driverVersion={"version": version},
            numa={"int": numa},
            boolAttribute={"bool": flag},
        )
    )
    for name, version, numa, flag in [
        (DEVICE1, "1.0.0", 0, True),
        (DEVICE2, "1.0.1", 1, False),
        (DEVICE3, "1.0.2", 2, True),
        (DEVICE4, "1.0.0", 3, True),
    ]
]
_BACKTRACK_TYPES = [
    slice_(
        SLICE1,
        NODE1,
        POOL1,
        DRIVER_A,
        dev(DEVICE1, None, type={"string": "X"}),
        resourceSliceCount=2,
    ),
    slice_(
        SLICE2,
        NODE1,
        POOL1,
        DRIVER_A,
        dev(DEVICE2, None, type={"string": "Y"}),
        resourceSliceCount=2,
    ),
    slice_(
        "slice-3",
        NODE1,
        POOL2,
        DRIVER_A,
        binding(dev(DEVICE3, None, type={"string": "Y"}), PREPARE, []),
    ),
]
_CAPACITY_PARTITIONABLE = {**CAPACITY, "PartitionableDevices": True, "PrioritizedList": True}
GI4, GI6 = str(4 * 2**30), str(6 * 2**30)


def _counted(name: str, *consumption: dict[str, Any], **attributes: Any) -> dict[str, Any]:
    """device(name, fromCounters, attributes).withDeviceCounterConsumption(...)."""
    return part(name, *consumption, from_counters=True, **attributes)


def _mode(value: str) -> dict[str, Any]:
    return cel(f'device.attributes["{DRIVER_A}"].mode == "{value}"')


def _partitions(devices: list[dict[str, Any]], *sets: dict[str, Any]) -> list[dict[str, Any]]:
    """Pool 1's devices in slice-1 and its counter sets in slice-2 (1.35 and later)."""
    return [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices, resourceSliceCount=2),
        sets_slice(SLICE2, POOL1, 2, *sets),
    ]


def _shared_partitions() -> GatedCase:
    """allow-multiple-allocations-with-partitionable-device: 1.34 shares one device that
    consumes counters between two claims (its counters count once); 1.35 rewrote the case."""
    name = "allow-multiple-allocations-with-partitionable-device"
    devices = [
        multi(_counted(d, consumes(CS1, memory=m)))
        for d, m in ((DEVICE1, "4Gi"), (DEVICE2, "6Gi"), (DEVICE3, "4Gi"))
    ]
    later = GatedCase(
        name,
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1,
                    sub_request(SUB0, CLASS_A, 1, memory("6Gi")),
                    sub_request(SUB1, CLASS_A, 1, memory("4Gi")),
                ),
            )
        ],
        [A_MULTI],
        _partitions(devices, counter_set(CS1, memory="8Gi")),
        expect=[
            [
                shared(REQ0, DRIVER_A, POOL1, DEVICE1, {"memory": GI4}),
                shared(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE3, {"memory": GI4}),
            ]
        ],
        features=_CAPACITY_PARTITIONABLE,
    )
    one = multi(part(DEVICE1, consumes(CS1, memory="4Gi")))
    return GatedCase(
        name,
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A],
        [with_sets(slice_(SLICE1, NODE1, POOL1, DRIVER_A, one), counter_set(CS1, memory="8Gi"))],
        expect=[[taking(DEVICE1, None)], [taking(DEVICE1, None)]],
        features={**CAPACITY, "PartitionableDevices": True},
        by_version=dict.fromkeys(LATER, later),
    )


def _capacity_pools() -> GatedCase:
    """consumable-capacity-with-partitionable-device-multiple-capacity-pools (1.35 and
    later): devices sharing two counter sets, each device allocatable several times."""

    def at_least(amount: str) -> dict[str, Any]:
        return cel(
            f'device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("{amount}")) >= 0'
        )

    devices = [
        policy_range(
            multi(_counted(d, consumes(CS1, **{CAPACITY0: c}), consumes(CS2, **{CAPACITY1: FOUR}))),
            {CAPACITY1: FOUR},
        )
        for d, c in ((DEVICE1, TWO), (DEVICE2, FOUR), (DEVICE3, TWO))
    ]
    return GatedCase(
        "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
        [
            claim(
                CLAIM0,
                asks(ONE),
                asks(TWO, name=REQ2),
                prioritized(
                    REQ1,
                    with_capacity(sub_request(SUB0, CLASS_A, 1, at_least(FOUR)), ONE),
                    with_capacity(sub_request(SUB1, CLASS_A, 1, at_least(TWO)), ONE),
                ),
            )
        ],
        [A],
        _partitions(
            devices, counter_set(CS1, **{CAPACITY0: FOUR}), counter_set(CS2, **{CAPACITY1: "8"})
        ),
        expect=[
            [
                shared(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: ONE, CAPACITY1: TWO}),
                shared(REQ2, DRIVER_A, POOL1, DEVICE3, {CAPACITY0: TWO, CAPACITY1: TWO}),
                shared(
                    f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE1, {CAPACITY0: ONE, CAPACITY1: TWO}
                ),
            ]
        ],
        features=_CAPACITY_PARTITIONABLE,
    )


_CASES: list[Case | LeftOut] = [
    GatedCase(
        "device-binding-conditions",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A],
        on_node(binding(dev(DEVICE1), PREPARE, FAILED)),
        expect=[[bound(REQ0, DRIVER_A, POOL1, DEVICE1, PREPARE, FAILED)]],
        features=BINDING,
    ),
    GatedCase(
        "binding-conditions-multiple-devices",
        [claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1))],
        [A],
        on_node(
            binding(dev(DEVICE1), PREPARE, FAILED),
            binding(dev(DEVICE2), ["IsPrepare2"], ["BindingFailed2"]),
            binding(dev(DEVICE3), ["IsPrepare3"], ["BindingFailed3"]),
        ),
        expect=[
            [
                bound(REQ0, DRIVER_A, POOL1, DEVICE1, PREPARE, FAILED),
                bound(REQ0, DRIVER_A, POOL1, DEVICE2, ["IsPrepare2"], ["BindingFailed2"]),
                bound(REQ1, DRIVER_A, POOL1, DEVICE3, ["IsPrepare3"], ["BindingFailed3"]),
            ]
        ],
        features=BINDING,
    ),
    GatedCase(
        "binding-conditions-with-and-without",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [A],
        on_node(dev(DEVICE1), binding(dev(DEVICE2), PREPARE, FAILED)),
        expect=[
            [
                plain(REQ0, DRIVER_A, POOL1, DEVICE1),
                bound(REQ1, DRIVER_A, POOL1, DEVICE2, PREPARE, FAILED),
            ]
        ],
        features=BINDING,
    ),
    GatedCase(
        "binding-conditions-without-feature-gate",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A],
        on_node(binding(dev(DEVICE1), PREPARE, FAILED)),
        features=NEITHER,
    ),
    # v0.34.9 only: 1.34 split the gate in two (DeviceBinding, DeviceStatus); either off
    # turns the feature off.
    GatedCase(
        "device-binding-conditions-without-binding-conditions-feature-gate",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A],
        on_node(binding(dev(DEVICE1), PREPARE, FAILED)),
        features=NEITHER,
    ),
    GatedCase(
        "device-binding-conditions-without-device-status-feature-gate",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [A],
        on_node(binding(dev(DEVICE1), PREPARE, FAILED)),
        features=NEITHER,
    ),
    LeftOut(
        "node-restriction",
        "network-attached: its slice is published for a nodeSelector (bindsToNode on it)",
    ),
    GatedCase(
        "consumable-capacity-disabled-feature",
        [claim(CLAIM0, asks(ONE))],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
        features=BINDING,
    ),
    GatedCase(
        "consumable-capacity-disabled-feature-with-prioritized-list",
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    with_capacity(sub_request(SUB0, CLASS_A, 1), ONE),
                    with_capacity(sub_request(SUB1, CLASS_A, 1), ONE),
                ),
            )
        ],
        [A],
        [one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=ERROR,
        features=BINDING,
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-missing-capacity-request",
        [claim(CLAIM0, asks(ONE))],
        [A],
        on_node(multi(dev(DEVICE1, {CAPACITY1: ONE}))),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request",
        [claim(CLAIM0, with_capacity(all_request(REQ0, CLASS_A), ONE))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY1: ONE}))),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1))),
        expect=[[taking(DEVICE1, None)], [taking(DEVICE1, None)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY0: ONE})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
        expect=[[taking(DEVICE1, ONE)], [taking(DEVICE2, ONE)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO}))),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request",
        [claim(CLAIM0, asks(ONE)), claim(CLAIM1, asks(ONE))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO}))),
        expect=[[taking(DEVICE1, ONE)], [taking(DEVICE1, ONE)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_MULTI],
        on_node(ranged(DEVICE1, FOUR)),
        expect=[[taking(DEVICE1, TWO)], [taking(DEVICE1, TWO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-zero-request-policy",
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        [A_MULTI],
        on_node(policy_values(multi(dev(DEVICE1)), ZERO, {CAPACITY0: ONE})),
        expect=[[taking(DEVICE1, ZERO)], [taking(DEVICE1, ZERO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-violates-zero-request-policy",
        [claim(CLAIM0, asks(ONE))],
        [A_MULTI],
        on_node(policy_values(multi(dev(DEVICE1)), ZERO, {CAPACITY0: ONE})),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request",
        [claim(CLAIM0, asks(ONE)), claim(CLAIM1, asks(ONE))],
        [A_MULTI],
        on_node(ranged(DEVICE1, FOUR)),
        expect=[[taking(DEVICE1, TWO)], [taking(DEVICE1, TWO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-range-policy-step",
        [claim(CLAIM0, asks(THREE))],
        [A_MULTI],
        on_node(ranged(DEVICE1, FOUR)),
        expect=[[taking(DEVICE1, FOUR)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-valid-values-policy",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(policy_values(multi(dev(DEVICE1)), ONE, {CAPACITY0: FOUR}, TWO)),
        expect=[[taking(DEVICE1, TWO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(policy_values(multi(dev(DEVICE1)), ONE, {CAPACITY0: THREE}, THREE)),
        expect=[[taking(DEVICE1, THREE)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request",
        [claim(CLAIM0, asks(ONE)), claim(CLAIM1, asks(TWO))],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO)),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy",
        [claim(CLAIM0, asks("6"))],
        [A_MULTI],
        on_node(ranged(DEVICE1, "10")),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(ranged(DEVICE1, FOUR)),
        expect=[[taking(DEVICE1, TWO)]],
        shared={ID1: {CAPACITY0: TWO}},
    ),
    # v0.34.9's name for the case above.
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-some-remaining-consumable-capacity",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(ranged(DEVICE1, FOUR)),
        expect=[[taking(DEVICE1, TWO)]],
        shared={ID1: {CAPACITY0: TWO}},
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO), ranged(DEVICE2, TWO)),
        expect=[[taking(DEVICE2, TWO)]],
        shared={ID1: {CAPACITY0: TWO}},
    ),
    GatedCase(
        "consumable-capacity-with-multi-allocatable-device-backtrack",
        [
            claim_with_requests(CLAIM0, [match(STRING_ATTRIBUTE)], asks(TWO), asks(TWO, name=REQ1)),
            claim(CLAIM1, asks(TWO)),
        ],
        [A],
        on_node(
            ranged(DEVICE2, TWO, stringAttribute={"string": "stringAttributeValue1"}),
            ranged(DEVICE1, FOUR, stringAttribute={"string": "stringAttributeValue2"}),
        ),
        expect=[
            [
                taking(DEVICE1, TWO),
                shared(REQ1, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: TWO}),
            ],
            [taking(DEVICE2, TWO)],
        ],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-subrequest",
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    with_capacity(sub_request(SUB0, CLASS_A, 1), FOUR),
                    with_capacity(sub_request(SUB1, CLASS_A, 1), TWO),
                    sub_request(SUB1, CLASS_A, 1),
                ),
            )
        ],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO)),
        expect=[[shared(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1, {CAPACITY0: TWO})]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
        [claim(CLAIM0, asks(TWO))],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO)),
        shared={ID1: {CAPACITY0: TWO}},
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
        [claim(CLAIM0, with_capacity(all_request(REQ0, CLASS_A), TWO))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO})), multi(dev(DEVICE2))),
        expect=[[taking(DEVICE1, TWO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity",
        [claim(CLAIM0, with_capacity(all_request(REQ0, CLASS_A), TWO))],
        [A_MULTI],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
        expect=[[taking(DEVICE1, TWO)]],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
        [claim(CLAIM0, asks(ONE), with_capacity(all_request(REQ1, CLASS_A), ONE))],
        [A],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
        expect=[
            [
                taking(DEVICE1, ONE),
                shared(REQ1, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: ONE}),
                shared(REQ1, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: ONE}),
            ]
        ],
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
        [claim(CLAIM0, with_capacity(all_request(REQ0, CLASS_A), ONE))],
        [A],
        on_node(multi(dev(DEVICE1, {CAPACITY0: TWO})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
        expect=[[taking(DEVICE1, ONE), taking(DEVICE2, ONE)]],
        shared={ID1: {CAPACITY0: ONE}},
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
        [claim(CLAIM0, asks(ONE), with_capacity(all_request(REQ1, CLASS_A), ONE))],
        [A],
        on_node(multi(dev(DEVICE1, {CAPACITY0: ONE})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
    ),
    GatedCase(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
        [claim(CLAIM0, with_capacity(all_request(REQ0, CLASS_A), ONE))],
        [A],
        on_node(multi(dev(DEVICE1, {CAPACITY0: ONE})), multi(dev(DEVICE2, {CAPACITY0: ONE}))),
        expect=[[taking(DEVICE2, ONE)]],
        shared={ID1: {CAPACITY0: ONE}},
        # 1.34 sized the All request without what allocated claims consume, then failed
        # on the full device.
        by_version={"v0.34.9": ()},
    ),
    GatedCase(
        "consumable-capacity-dedicated-device-with-consumable-capacity-request",
        [claim(CLAIM0, asks(ONE))],
        [A_DEDICATED],
        on_node(dev(DEVICE1, {CAPACITY0: ONE})),
        expect=[[plain(REQ0, DRIVER_A, POOL1, DEVICE1)]],
    ),
    GatedCase(
        "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
        [claim(CLAIM0, asks(ONE)), claim(CLAIM1, asks(ONE))],
        [A_DEDICATED],
        on_node(policy_range(dev(DEVICE1), {CAPACITY0: TWO})),
    ),
    GatedCase(
        "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
        [claim(CLAIM0, asks(ONE))],
        [A_DEDICATED],
        on_node(multi(dev(DEVICE1, {CAPACITY0: ONE}))),
    ),
    GatedCase(
        "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
        [claim(CLAIM0, asks(ONE))],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO)),
        allocated=[ID1],
    ),
    GatedCase(
        "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable",
        [claim(CLAIM0, asks(ONE))],
        [A_MULTI],
        on_node(policy_range(dev(DEVICE1), {CAPACITY0: TWO})),
        shared={ID1: {CAPACITY0: ONE}},
    ),
    _shared_partitions(),
    GatedCase(
        "allow-multiple-allocations-with-shared-device-counter-cross-cycle",
        [claim(CLAIM0, with_capacity(request(REQ0, CLASS_A, 1, _mode("b")), ONE))],
        [A_MULTI],
        _partitions(
            [
                multi(_counted(DEVICE1, consumes(CS1, **{CAPACITY0: ONE}), mode={"string": "a"})),
                multi(_counted(DEVICE2, consumes(CS1, **{CAPACITY0: ONE}), mode={"string": "b"})),
            ],
            counter_set(CS1, **{CAPACITY0: ONE}),
        ),
        shared={ID1: {CAPACITY0: ONE}},
        features=_CAPACITY_PARTITIONABLE,
    ),
    _capacity_pools(),
    GatedCase(
        "with-distinct-constraints",
        [
            claim_with_requests(
                CLAIM0,
                [
                    distinct(BOOL_ATTRIBUTE, REQ0, REQ1),
                    distinct(VERSION_ATTRIBUTE, REQ0, REQ1, REQ2),
                    distinct(INT_ATTRIBUTE, REQ0, REQ1, REQ2, REQ3),
                ],
                *(request(r, CLASS_A, 1) for r in (REQ0, REQ1, REQ2, REQ3)),
            )
        ],
        [A],
        on_node(*_DISTINCT_DEVICES),
        expect=[
            [
                shared(r, DRIVER_A, POOL1, d, {})
                for r, d in zip(
                    (REQ0, REQ1, REQ2, REQ3), (DEVICE1, DEVICE2, DEVICE3, DEVICE4), strict=True
                )
            ]
        ],
    ),
    GatedCase(
        "with-distinct-constraints-attribute-not-set",
        [claim_with_requests(CLAIM0, [distinct(BOOL_ATTRIBUTE, REQ0)], request(REQ0, CLASS_A, 1))],
        [A],
        on_node(multi(dev(DEVICE1))),
    ),
    LeftOut(
        "with-distinct-constraints-unknown-type-attribute",
        "an attribute with no value: API validation refuses it, and kube-rdma refuses its slice",
    ),
    GatedCase(
        "with-distinct-constraints-with-subrequests",
        [
            claim_with_requests(
                CLAIM0,
                [distinct(BOOL_ATTRIBUTE, REQ0, REQ1)],
                _boolean_first(REQ0),
                _boolean_first(REQ1),
                _boolean_first(REQ2),
            )
        ],
        [A],
        on_node(
            multi(dev(DEVICE1, None, boolAttribute={"bool": True})),
            multi(dev(DEVICE2, None, boolAttribute={"bool": False})),
        ),
        expect=[
            [
                shared(f"{REQ0}/{SUB0}", DRIVER_A, POOL1, DEVICE1, {}),
                shared(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE2, {}),
                shared(f"{REQ2}/{SUB0}", DRIVER_A, POOL1, DEVICE1, {}),
            ]
        ],
    ),
    GatedCase(
        "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
        [
            claim_with_requests(
                CLAIM0, [distinct(STRING_ATTRIBUTE)], asks(ONE), asks(ONE, name=REQ1)
            )
        ],
        [A_MULTI],
        on_node(ranged(DEVICE1, TWO, stringAttribute={"string": "stringAttributeValue"})),
    ),
    GatedCase(
        "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
        [
            claim_with_requests(
                CLAIM0, [distinct(STRING_ATTRIBUTE)], asks(TWO), asks(TWO, name=REQ1)
            )
        ],
        [A_MULTI],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                ranged(DEVICE1, FOUR, stringAttribute={"string": "stringAttributeValue1"}),
                resourceSliceCount=2,
            ),
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                ranged(DEVICE2, FOUR, stringAttribute={"string": "stringAttributeValue2"}),
                resourceSliceCount=2,
            ),
        ],
        expect=[[taking(DEVICE1, TWO), shared(REQ1, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: TWO})]],
    ),
    # Added in release-1.36: the pool with a binding condition is searched last.
    GatedCase(
        "check-combinations-with-backtracking-across-slices-and-pools",
        [
            claim(
                CLAIM0,
                request(REQ1, CLASS_A, 2),
                request(REQ2, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].type == "X"')),
            )
        ],
        [A],
        _BACKTRACK_TYPES,
        expect=[
            [
                plain(REQ1, DRIVER_A, POOL1, DEVICE2),
                bound(REQ1, DRIVER_A, POOL2, DEVICE3, PREPARE, []),
                plain(REQ2, DRIVER_A, POOL1, DEVICE1),
            ]
        ],
        features=BINDING,
    ),
]

CASES: dict[str, Case | LeftOut] = {c.name: c for c in _CASES}
