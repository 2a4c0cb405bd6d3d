"""The bind barrier and DRA binding conditions: a gang whose members all arrived opens only once
every member's devices are ready (their claims' binding conditions True), and is given up,
nothing bound, when a device failed."""

from __future__ import annotations

from typing import Any

from extender.gangs.barrier import Barrier
from tests.extender.gangs.test_barrier import PLANNED, arrive, outcome, planned
from tests.extender.gangs.two_leaves import TRIO, Setup, member

DEVICE = {"driver": "dra.net", "pool": "a2", "device": "eth1"}


def claimed(s: Setup, conditions: dict[str, str]) -> None:
    """Member trio-2 gets claim nic-2, whose NIC must be attached before the pod binds; the
    driver has reported `conditions` so far."""
    pod = member(TRIO, 2)
    pod["spec"]["resourceClaims"] = [{"name": "nic", "resourceClaimName": "nic-2"}]
    s.cluster.upsert_pod(pod)
    result: dict[str, Any] = {"request": "nic", **DEVICE}
    result.update({"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]})
    status: dict[str, Any] = {"allocation": {"devices": {"results": [result]}}}
    status["devices"] = [
        {**DEVICE, "conditions": [{"type": t, "status": v} for t, v in conditions.items()]}
    ]
    claim = {"metadata": {"name": "nic-2", "namespace": "team-a"}, "spec": {}, "status": status}
    s.cluster.dra.upsert_claim(claim)


async def everyone(barrier: Barrier) -> list[str]:
    waits = [arrive(barrier, TRIO, i, PLANNED[i]) for i in range(3)]
    return [await outcome(w) for w in waits]


async def test_the_gang_opens_once_the_devices_are_ready() -> None:
    s, barrier, binds = planned(TRIO, timeout=0.05)
    claimed(s, {"Attached": "False"})
    waiting = (
        "gang team-a/trio: every member reached bind, but member team-a/trio-2, claim nic-2: "
        "device dra.net/a2/eth1: binding condition Attached is not True; this one keeps its "
        "place and is bound once the devices are ready"
    )
    assert await everyone(barrier) == [waiting] * 3
    assert list(s.planner.plans) == [TRIO.key], "the gang keeps its plan while it waits"
    claimed(s, {"Attached": "True"})
    # The first retry finds the devices ready and opens the barrier: it binds its member, and
    # the barrier binds the others, whose requests had returned.
    assert await everyone(barrier) == ["binds", "bound", "bound"]
    assert sorted(binds.made) == [("trio-1", "uid-trio-1", "a1"), ("trio-2", "uid-trio-2", "a2")]


async def test_a_failed_device_gives_the_gang_up_with_nothing_bound() -> None:
    s, barrier, binds = planned(TRIO, timeout=1.0)
    claimed(s, {"Attached": "False", "Failed": "True"})
    failed = (
        "gang team-a/trio: every member reached bind, but member team-a/trio-2, claim nic-2: "
        "device dra.net/a2/eth1: binding failure condition Failed is True; the gang is planned "
        "again"
    )
    assert await everyone(barrier) == [failed] * 3
    assert s.planner.plans == {}
    assert binds.made == []


async def test_a_status_of_unknown_shape_is_not_bound_and_says_which_field() -> None:
    s, barrier, binds = planned(TRIO, timeout=1.0)
    claimed(s, {"Attached": "Yes"})
    [first, *_] = await everyone(barrier)
    assert first == (
        "gang team-a/trio: every member reached bind, but member team-a/trio-2, claim nic-2: "
        "its status cannot be read: status.devices[0].conditions[0].status: 'Yes' is not True, "
        "False or Unknown; the gang is planned again"
    )
    assert binds.made == []
