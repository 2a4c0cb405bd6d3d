"""Kubernetes' allocator test table, the cases of device taints and partitionable devices:
TestAllocator in k8s.io/dynamic-resource-allocation
structured/internal/allocatortesting/allocator_testing.go, translated from v0.34.9 (commit
bf5dd065dee3baa9819013d591805cc78dd7be00) and release-1.35, release-1.36 and master
(versions.py). Each case is named as upstream names it and names the features it turns on
(`features`), which the harness runs with.

1.34 lists a pool's counter sets beside its devices (`withCounterSet`); 1.35 moved them into
slices of their own (`sliceWithCounterSets`, the pool's `resourceSliceCount` counting them), so
a case both write carries the 1.35 objects in `by_version` (`_later`). Results leave out the
tolerations 1.35 copies into them: kube-rdma writes no allocation result.

Binding conditions on partitionable devices run with DeviceBindingAndStatus on too, their
results naming the conditions (builders_capacity.py). Left out, with why: per-device node
selection and pools whose slices sit on several nodes (kube-rdma reads node-local pools only),
and binding conditions over slices whose order differs by version.
"""

from __future__ import annotations

from typing import Any

from kube_rdma.core.objects import Json
from tests.kube_rdma.core.dra.upstream.builders import (
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    ERROR,
    NODE1,
    NONE,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    LeftOut,
    all_request,
    cel,
    claim_with_requests,
    class_,
    device,
    prioritized,
    request,
    result,
    slice_,
    sub_request,
)
from tests.kube_rdma.core.dra.upstream.builders_capacity import binding, bound

FILE = "structured/internal/allocatortesting/allocator_testing.go"
A, B = class_(CLASS_A, DRIVER_A), class_(CLASS_B, DRIVER_B)
CS1, CS2 = "counter-set-1", "counter-set-2"
SLICE3, SLICE4 = "slice-3", "slice-4"
R0S1 = f"{REQ0}/{SUB1}"
R1S1 = f"{REQ1}/{SUB1}"
LATER = ("release-1.35", "release-1.36", "master")
PARTITIONABLE = {"PartitionableDevices": True}
PRIORITIZED_PARTITIONABLE = {"PartitionableDevices": True, "PrioritizedList": True}
TAINTS = {"DeviceTaints": True}
NO_TAINTS = {"DeviceTaints": False}

TAINT_KEY, TAINT_VALUE, TAINT_VALUE2 = "taint-key", "taint-value", "taint-value-2"
NO_SCHEDULE = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "NoSchedule"}
NO_EXECUTE = {"key": TAINT_KEY, "value": TAINT_VALUE2, "effect": "NoExecute"}
NONE_EFFECT = {"key": TAINT_KEY, "value": TAINT_VALUE, "effect": "None"}
TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": TAINT_KEY, "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {
    "operator": "Equal",
    "key": TAINT_KEY,
    "value": TAINT_VALUE2,
    "effect": "NoExecute",
}


def consumes(counter_set: str, **counters: str) -> Json:
    """deviceCounterConsumption."""
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, **counters: str) -> Json:
    """counterSet."""
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def part(name: str, *consumption: Json, from_counters: bool = False, **attributes: Json) -> Json:
    """device(name, capacity, attributes).withDeviceCounterConsumption(...): with
    `from_counters` (upstream's `fromCounters`) its capacity is what it consumes."""
    found = device(name, attributes=dict(attributes) or None)
    found["consumesCounters"] = list(consumption)
    if from_counters:
        found["capacity"] = {k: v for c in consumption for k, v in c["counters"].items()}
    return found


def tainted(name: str, *taints: Json) -> Json:
    """device(name, nil, nil).withTaints(...)."""
    return {**device(name), "taints": list(taints)}


def with_sets(obj: Json, *sets: Json) -> Json:
    """withCounterSet: 1.34's counter sets beside the slice's devices."""
    obj["spec"]["sharedCounters"] = list(sets)
    return obj


def sets_slice(name: str, pool: str, count: int, *sets: Json, driver: str = DRIVER_A) -> Json:
    """sliceWithCounterSets (1.35 and later): a slice of counter sets only."""
    found = slice_(name, NODE1, pool, driver, resourceSliceCount=count)
    found["spec"]["sharedCounters"] = list(sets)
    return found


def tolerating(obj: Json, *tolerations: Json) -> Json:
    """withTolerations: on each of the claim's requests."""
    for r in obj["spec"]["devices"]["requests"]:
        r["exactly"]["tolerations"] = list(tolerations)
    return obj


def memory(at_least: str) -> Json:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{at_least}")) >= 0')


def _later(case: Case) -> dict[str, Any]:
    return dict.fromkeys(LATER, case)


def _both(name: str, claims: list[Json], devices: list[Json], sets: list[Json], **kw: Any) -> Case:
    """A case of one pool on node-1, its devices in slice-1 and its counter sets beside them
    (1.34) or in slice-2 (1.35 and later)."""
    old = [with_sets(slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices), *sets)]
    new = [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices, resourceSliceCount=2),
        sets_slice(SLICE2, POOL1, 2, *sets),
    ]
    later = Case(name, claims, [A], new, **kw)
    return Case(name, claims, [A], old, **kw, by_version=_later(later))


_FOUR_SIX_FOUR = [
    part(DEVICE1, consumes(CS1, memory="4Gi"), from_counters=True),
    part(DEVICE2, consumes(CS1, memory="6Gi"), from_counters=True),
    part(DEVICE3, consumes(CS1, memory="4Gi"), from_counters=True),
]
_PICK_BY_MEMORY = prioritized(
    REQ1, sub_request(SUB0, CLASS_A, 1, memory("6Gi")), sub_request(SUB1, CLASS_A, 1, memory("4Gi"))
)


def _two_pools() -> tuple[list[Json], list[Json]]:
    """partitionable-devices-multiple-pools' slices, as 1.34 and as 1.35 write them."""
    pool1 = [
        part(DEVICE1, consumes(CS1, cpus="6", memory="4Gi"), from_counters=True),
        part(DEVICE2, consumes(CS1, cpus="4", memory="6Gi"), from_counters=True),
        part(DEVICE3, consumes(CS1, cpus="4", memory="4Gi"), from_counters=True),
    ]
    pool2 = [
        part(DEVICE1, consumes(CS1, cpus="6", memory="4Gi"), from_counters=True),
        part(DEVICE2, consumes(CS1, cpus="1", memory="7Gi"), from_counters=True),
        part(DEVICE3, consumes(CS1, cpus="1", memory="7Gi"), from_counters=True),
    ]
    total = counter_set(CS1, cpus="8", memory="18Gi")
    old = [
        with_sets(slice_(SLICE1, NODE1, POOL1, DRIVER_A, *pool1), total),
        with_sets(slice_(SLICE2, NODE1, POOL2, DRIVER_A, *pool2), total),
    ]
    new = [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, *pool1, resourceSliceCount=2),
        sets_slice(SLICE2, POOL1, 2, total),
        slice_(SLICE3, NODE1, POOL2, DRIVER_A, *pool2, resourceSliceCount=2),
        sets_slice(SLICE4, POOL2, 2, total),
    ]
    return old, new


def _multiple_pools() -> Case:
    old, new = _two_pools()
    claims = [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A), request(REQ1, CLASS_A))]
    held = [(DRIVER_A, POOL1, DEVICE2), (DRIVER_A, POOL1, DEVICE3), (DRIVER_A, POOL2, DEVICE1)]
    expect = [[result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL2, DEVICE3)]]
    name = "partitionable-devices-multiple-pools"
    kw: dict[str, Any] = {"allocated": held, "expect": expect, "features": PARTITIONABLE}
    return Case(name, claims, [A], old, **kw, by_version=_later(Case(name, claims, [A], new, **kw)))


def _disabled(name: str, devices: list[Json], count: int, expect: Any) -> Case:
    """The cases with partitionable devices off: 1.35 writes the pool's counter sets in a
    slice of their own, with `resourceSliceCount` `count`."""
    claims = [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))]
    total = counter_set(CS1, memory="18Gi")
    old = [with_sets(slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices), total)]
    new = [
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices, resourceSliceCount=count),
        sets_slice(SLICE2, POOL1, count, total),
    ]
    kw: dict[str, Any] = {"expect": expect, "features": {"PartitionableDevices": False}}
    return Case(name, claims, [A], old, **kw, by_version=_later(Case(name, claims, [A], new, **kw)))


def _one_request(*devices: Json, tolerations: tuple[Json, ...] = (), **kw: Any) -> dict[str, Any]:
    claims = [tolerating(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A)), *tolerations)]
    return {
        "claims": claims,
        "classes": [A],
        "slices": [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices)],
        **kw,
    }


def _admin(features: dict[str, bool], expect: Any, name: str) -> Case:
    claims = [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, adminAccess=True))]
    return Case(
        name,
        claims,
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, tainted(DEVICE1, NO_SCHEDULE))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        expect=expect,
        features={**features, "AdminAccess": True},
    )


def _all(name: str, features: dict[str, bool], expect: Any) -> Case:
    return Case(
        name,
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, tainted(DEVICE1, NO_SCHEDULE))],
        expect=expect,
        features=features,
    )


def _prioritized_taint(name: str, features: dict[str, bool], expect: Any) -> Case:
    return Case(
        name,
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
            )
        ],
        [A, B],
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, tainted(DEVICE1, NO_SCHEDULE))],
        expect=expect,
        features={**features, "PrioritizedList": True},
    )


def _pool_error(name: str, slices: list[Json]) -> Case:
    """1.35 and later: the pool is invalid for its counters, so the allocator errors
    ("invalid resource pools were encountered")."""
    claims = [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))]
    return Case(name, claims, [A], slices, expect=ERROR, features=PARTITIONABLE)


READY1 = (["IsPrepare"], ["BindingFailed"])
READY2 = (["IsPrepare2"], ["BindingFailed2"])
READY3 = (["IsReady"], ["BindingTimeout"])
BOUND = {**PARTITIONABLE, "DeviceBindingAndStatus": True}
KEY1 = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
TOLERATE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}


def _bound(
    name: str,
    count: int,
    devices: list[tuple[str, str, tuple[list[str], list[str]] | None]],
    expect: list[Any],
) -> Case:
    """The partitionable-devices-with-binding-conditions cases: devices consuming counter
    set 1 (8Gi of memory), some with binding conditions, which their results copy."""
    found = [
        binding(part(d, consumes(CS1, memory=m), from_counters=True), *ready)
        if ready
        else part(d, consumes(CS1, memory=m), from_counters=True)
        for d, m, ready in devices
    ]
    claims = [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, count))]
    total = counter_set(CS1, memory="8Gi")
    return _both(name, claims, found, [total], expect=[expect], features=BOUND)


def _bound_tainted(name: str, tolerations: tuple[Json, ...], expect: Any) -> Case:
    """Two devices consuming 4Gi of counter set 1 (8Gi) each, the first with binding
    conditions and a NoSchedule taint; the claim asks for both."""
    devices = [
        {
            **binding(part(DEVICE1, consumes(CS1, memory="4Gi"), from_counters=True), *READY1),
            "taints": [KEY1],
        },
        part(DEVICE2, consumes(CS1, memory="4Gi"), from_counters=True),
    ]
    claims = [
        tolerating(claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2)), *tolerations)
    ]
    total = counter_set(CS1, memory="8Gi")
    features = {**BOUND, "DeviceTaints": True}
    return _both(name, claims, devices, [total], expect=expect, features=features)


def _left_out(why: str, *names: str) -> list[Case | LeftOut]:
    return [LeftOut(n, why) for n in names]


_CASES: list[Case | LeftOut] = [
    _both(
        "partitionable-devices-single-device",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))],
        [part(DEVICE1, consumes(CS1, memory="4Gi"))],
        [counter_set(CS1, memory="8Gi")],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        features=PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-prioritized-list",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A), _PICK_BY_MEMORY)],
        _FOUR_SIX_FOUR,
        [counter_set(CS1, memory="8Gi")],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3)]],
        features=PRIORITIZED_PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-multiple-devices",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        _FOUR_SIX_FOUR,
        [counter_set(CS1, memory="8Gi")],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3)]],
        features=PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-multiple-capacity-pools",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A), _PICK_BY_MEMORY)],
        [
            part(DEVICE1, consumes(CS1, memory="4Gi"), consumes(CS2, cpus="4"), from_counters=True),
            part(DEVICE2, consumes(CS1, memory="6Gi"), consumes(CS2, cpus="6"), from_counters=True),
            part(DEVICE3, consumes(CS1, memory="4Gi"), consumes(CS2, cpus="4"), from_counters=True),
        ],
        [counter_set(CS1, memory="18Gi"), counter_set(CS2, cpus="8")],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1), result(R1S1, DRIVER_A, POOL1, DEVICE3)]],
        features=PRIORITIZED_PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-multiple-counters",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        [
            part(
                DEVICE1,
                consumes(CS1, memory="4Gi", cpus="6"),
                consumes(CS2, cpus="4", memory="2Gi"),
                from_counters=True,
            ),
            part(
                DEVICE2,
                consumes(CS1, memory="6Gi", cpus="4"),
                consumes(CS2, cpus="6", memory="6Gi"),
                from_counters=True,
            ),
            part(
                DEVICE3,
                consumes(CS1, memory="4Gi", cpus="4"),
                consumes(CS2, cpus="4", memory="4Gi"),
                from_counters=True,
            ),
        ],
        [
            counter_set(CS1, cpus="8", memory="18Gi"),
            counter_set(CS2, cpus="12", memory="18Gi"),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3)]],
        features=PARTITIONABLE,
    ),
    _multiple_pools(),
    _both(
        "partitionable-devices-unused-counters-in-counter-set",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A, 2))],
        [
            part(DEVICE1, consumes(CS1, memory="5Gi")),
            part(DEVICE2, consumes(CS1, memory="4Gi")),
            part(DEVICE3, consumes(CS1, memory="4Gi")),
        ],
        [counter_set(CS1, memory="8Gi", unused="1Gi")],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE3)]],
        features=PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-no-capacity-available",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))],
        [
            part(DEVICE1, consumes(CS1, memory="4Gi"), from_counters=True),
            part(DEVICE2, consumes(CS1, memory="16Gi"), from_counters=True),
        ],
        [counter_set(CS1, memory="18Gi")],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        features=PARTITIONABLE,
    ),
    _both(
        "partitionable-devices-overallocated-capacity-pool",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))],
        [
            part(DEVICE1, consumes(CS1, memory="4Gi"), from_counters=True),
            part(DEVICE2, consumes(CS1, memory="20Gi"), from_counters=True),
        ],
        [counter_set(CS1, memory="18Gi")],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        features=PARTITIONABLE,
    ),
    _disabled(
        "partitionable-devices-disabled-device-consumes-counters",
        [part(DEVICE1, consumes(CS1, memory="4Gi"))],
        1,
        (),
    ),
    _disabled(
        "partitionable-devices-disabled-other-device-do-not-consume-counters",
        [part(DEVICE1, consumes(CS1, memory="4Gi")), device(DEVICE2)],
        2,
        [[result(REQ0, DRIVER_A, POOL1, DEVICE2)]],
    ),
    Case(
        # A slice with per-device node selection is not read: nothing to allocate from.
        "partitionable-devices-disabled-per-device-node-selection",
        [claim_with_requests(CLAIM0, None, request(REQ0, CLASS_A))],
        [A],
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": SLICE1},
                "spec": {
                    "driver": DRIVER_A,
                    "perDeviceNodeSelection": True,
                    "pool": {"name": POOL1, "resourceSliceCount": 1, "generation": 1},
                    "devices": [{**device(DEVICE2), "nodeName": NODE1}],
                },
            }
        ],
        features={"PartitionableDevices": False},
    ),
    *_left_out(
        "per-device node selection: kube-rdma reads node-local pools only",
        "partitionable-devices-per-device-node-selection-nodename",
        "partitionable-devices-per-device-node-selection-node-selector",
        "partitionable-devices-per-device-node-selection-node-selector-multiple-devices",
    ),
    Case(
        "tainted-two-devices",
        **_one_request(tainted(DEVICE1, NO_SCHEDULE), tainted(DEVICE2, NO_EXECUTE)),
        features=TAINTS,
    ),
    Case(
        "tainted-one-device-two-taints",
        **_one_request(tainted(DEVICE1, NO_SCHEDULE, NO_EXECUTE)),
        features=TAINTS,
    ),
    Case(
        "tainted-two-devices-tolerated",
        **_one_request(
            tainted(DEVICE1, NO_SCHEDULE),
            tainted(DEVICE2, NO_EXECUTE),
            tolerations=(TOLERATE_NO_EXECUTE,),
        ),
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE2)]],  # only device-2's taint is tolerated
        features=TAINTS,
    ),
    Case(  # release-1.35 and later
        "tainted-two-devices-prioritized-list-tolerated",
        [
            claim_with_requests(
                CLAIM0,
                None,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A),
                    sub_request(SUB1, CLASS_A, 1, tolerations=[TOLERATE_NO_EXECUTE]),
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
                tainted(DEVICE1, NO_SCHEDULE),
                tainted(DEVICE2, NO_EXECUTE),
            )
        ],
        expect=[[result(R0S1, DRIVER_A, POOL1, DEVICE2)]],
        features={**TAINTS, "PrioritizedList": True},
    ),
    Case(  # release-1.35 and later: the None effect keeps no device from a request
        "tainted-no-effect",
        **_one_request(tainted(DEVICE1, NONE_EFFECT)),
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        features=TAINTS,
    ),
    Case(
        "tainted-one-device-two-taints-both-tolerated",
        **_one_request(
            tainted(DEVICE1, NO_SCHEDULE, NO_EXECUTE),
            tolerations=(TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE),
        ),
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        features=TAINTS,
    ),
    Case(
        "tainted-disabled",
        **_one_request(tainted(DEVICE1, NO_SCHEDULE, NO_EXECUTE)),
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        features=NO_TAINTS,
    ),
    _prioritized_taint("tainted-prioritized-list", TAINTS, ()),
    _prioritized_taint(
        "tainted-prioritized-list-disabled",
        NO_TAINTS,
        [[result(R0S1, DRIVER_A, POOL1, DEVICE1)]],
    ),
    _admin(TAINTS, (), "tainted-admin-access"),
    _admin(
        NO_TAINTS,
        [[result(REQ0, DRIVER_A, POOL1, DEVICE1, admin=True)]],
        "tainted-admin-access-disabled",
    ),
    _all("tainted-all-devices-single", TAINTS, ()),
    _all(
        "tainted-all-devices-single-disabled",
        NO_TAINTS,
        [[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
    ),
    _both(
        "partitionable-devices-with-attribute-selector",
        [
            claim_with_requests(
                CLAIM0,
                None,
                request(REQ0, CLASS_A, 2),
                request(REQ1, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].special')),
            )
        ],
        [
            part(
                DEVICE1,
                consumes(CS1, cpu1="1"),
                consumes(CS2, mem="10Gi"),
                special={"bool": True},
            ),
            part(
                DEVICE2,
                consumes(CS1, cpu2="1"),
                consumes(CS2, mem="10Gi"),
                special={"bool": False},
            ),
            part(
                DEVICE3,
                consumes(CS1, cpu3="1"),
                consumes(CS2, mem="10Gi"),
                special={"bool": False},
            ),
        ],
        [counter_set(CS1, cpu1="1", cpu2="1", cpu3="1"), counter_set(CS2, mem="30Gi")],
        expect=[
            [
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            ]
        ],
        features=PARTITIONABLE,
    ),
    _bound(
        "partitionable-devices-with-binding-conditions",
        1,
        [(DEVICE1, "4Gi", READY1)],
        [bound(REQ0, DRIVER_A, POOL1, DEVICE1, *READY1)],
    ),
    _bound(
        "partitionable-devices-with-binding-conditions-multiple",
        2,
        [(DEVICE1, "4Gi", READY1), (DEVICE2, "4Gi", READY2)],
        [
            bound(REQ0, DRIVER_A, POOL1, DEVICE1, *READY1),
            bound(REQ0, DRIVER_A, POOL1, DEVICE2, *READY2),
        ],
    ),
    _bound(
        "partitionable-devices-with-binding-conditions-some-devices-no-conditions",
        3,
        [(DEVICE1, "2Gi", READY1), (DEVICE2, "2Gi", None), (DEVICE3, "4Gi", READY3)],
        [
            bound(REQ0, DRIVER_A, POOL1, DEVICE1, *READY1),
            result(REQ0, DRIVER_A, POOL1, DEVICE2),
            bound(REQ0, DRIVER_A, POOL1, DEVICE3, *READY3),
        ],
    ),
    LeftOut(
        "partitionable-devices-with-binding-conditions-multi-slices",
        "1.34 counts a counter set per slice, and later versions order a pool's slices by name",
    ),
    _bound_tainted("partitionable-devices-with-binding-conditions-and-taints", (), NONE),
    _bound_tainted(
        "partitionable-devices-with-binding-conditions-and-taints-tolerated",
        (TOLERATE_KEY1,),
        [[bound(REQ0, DRIVER_A, POOL1, DEVICE1, *READY1), result(REQ0, DRIVER_A, POOL1, DEVICE2)]],
    ),
    # release-1.35 and later only: counter sets in slices of their own.
    Case(
        "all-devices-with-consumed-counters",
        [claim_with_requests(CLAIM0, None, all_request(REQ0, CLASS_A))],
        [A],
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                part(DEVICE1, consumes(CS1, memory="4Gi")),
                resourceSliceCount=2,
            ),
            sets_slice(SLICE2, POOL1, 2, counter_set(CS1, memory="8Gi")),
        ],
        expect=[[result(REQ0, DRIVER_A, POOL1, DEVICE1)]],
        features=PARTITIONABLE,
    ),
    _pool_error(
        # release-1.36 swaps the slices' names; names do not matter here.
        "partitionable-devices-same-counter-set-name-in-different-resource-slices",
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), resourceSliceCount=4),
            sets_slice(SLICE2, POOL1, 4, counter_set(CS1)),
            slice_(SLICE3, NODE1, POOL1, DRIVER_A, device(DEVICE2), resourceSliceCount=4),
            sets_slice(SLICE4, POOL1, 4, counter_set(CS1)),
        ],
    ),
    _pool_error(
        "partitionable-devices-device-counter-consumption-references-unknown-counter-set",
        [
            slice_(
                SLICE1, NODE1, POOL1, DRIVER_A, part(DEVICE1, consumes(CS2)), resourceSliceCount=2
            ),
            sets_slice(SLICE2, POOL1, 2, counter_set(CS1)),
        ],
    ),
    _pool_error(
        "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set",
        [
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                part(DEVICE1, consumes(CS1, memory="8Gi")),
                resourceSliceCount=2,
            ),
            sets_slice(SLICE2, POOL1, 2, counter_set(CS1, **{"other-memory": "8Gi"})),
        ],
    ),
    _pool_error(
        "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool",
        [
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, part(DEVICE1, consumes(CS1, memory="8Gi"))),
            sets_slice(SLICE2, POOL2, 1, counter_set(CS1, memory="8Gi")),
        ],
    ),
    *_left_out(
        "multi-host pools: one pool's slices on several nodes",
        "partitionable-devices-devices-on-different-nodes-consume-same-counter-set",
        "partitionable-devices-devices-consume-counter-set-in-different-nodes",
        "partitionable-devices-validation-error-on-non-targeting-slice",
    ),
]

CASES: dict[str, Case | LeftOut] = {c.name: c for c in _CASES}
