"""Gang preemption and holds in a DRA-only cluster: GPUs and NICs published as ResourceSlices,
every pod's devices held by the resource claims generated for it (testbed/clustergen/dra.py).
The same cluster in its device-plugin form must give the same victims and the same holds, and
a high-priority gang asking for its devices through claims preempts whole units and is then
placed whole, once the ResourceClaim controller has let the victims' claims go."""

from __future__ import annotations

from typing import Any

import pytest

from extender.book.holds import Victims
from extender.cluster import dra_objects
from extender.cluster.model import Cluster
from extender.preemption.freeing import owning_pod
from extender.preemption.units import Units
from extender.scheduling import Scheduler
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.gangs import Clock, member
from testbed.builders.gangs import scheduler as contention_scheduler
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.dra import dra_form

LEAF = keys.LEAF
NAMES = [f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)]
URGENT = ("team-a", "urgent")
FORMS = ["device plugins", "DRA"]


def cluster() -> list[Json]:
    return [nodes.node(n, nodes.hgx(), labels={LEAF: f"leaf-{n[0]}"}) for n in NAMES]


def running() -> list[Json]:
    """Leaf a: two gangs of priority 1; leaf b: one gang of priority 2. Every GPU is busy."""
    return [
        *(member("ft", i, 2, 1, f"a{i}") for i in range(2)),
        *(member("eval", i, 2, 1, f"a{i + 2}") for i in range(2)),
        *(member("pretrain", i, 4, 2, f"b{i}") for i in range(4)),
    ]


def scheduler(objects: list[Json], form: str, clock: Clock, **settings: Any) -> Scheduler:
    return contention_scheduler(dra_form(objects) if form == "DRA" else objects, clock, **settings)


def claim_controller(cluster: Cluster) -> list[str]:
    """What the ResourceClaim controller and the garbage collector do once pods are gone: a
    claim generated for a pod that no longer exists is deleted. The names deleted."""
    uids = {str(p["metadata"].get("uid")) for p in cluster.pods()}
    gone = [c for c in cluster.dra.claims.values() if owning_pod(c) not in (None, *uids)]
    for found in gone:
        dra_objects.apply(cluster, "ResourceClaim", "DELETED", found)
    return sorted(str(c["metadata"]["name"]) for c in gone)


def test_the_dra_form_is_full() -> None:
    s = scheduler(cluster() + running(), "DRA", Clock())
    model = s._source.cluster
    assert not any(
        "nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {})
        for p in model.pods()
        for c in p["spec"]["containers"]
    )
    assert len(model.dra.claims) == 8
    assert {n.name: n.free("nvidia.com/gpu") for n in model.nodes()} == dict.fromkeys(NAMES, 0)


@pytest.mark.parametrize("form", FORMS)
async def test_a_high_priority_gang_preempts_the_same_whole_units_in_both_forms(form: str) -> None:
    clock = Clock()
    urgent = [member("urgent", i, 4, 10) for i in range(4)]
    s = scheduler([*cluster(), *running(), *urgent], form, clock)
    answer = s.filter(s._source.cluster.pod("team-a", "urgent-0") or {}, NAMES)
    reason = (
        "gang team-a/urgent needs 4 x (8 GPU, 8 rails): cluster fits 0; preempting "
        "gang team-a/ft, gang team-a/eval in leaf-a; 4 nodes held until they are gone"
    )
    assert answer.unresolvable == dict.fromkeys(NAMES, reason)
    hold = s.holds.get(URGENT)
    assert hold is not None
    assert (hold.domain, sorted(hold.nodes), hold.gpus) == ("leaf-a", NAMES[:4], 32)
    assert hold.units == (
        ("gang team-a/ft", (("team-a", "ft-0"), ("team-a", "ft-1"))),
        ("gang team-a/eval", (("team-a", "eval-0"), ("team-a", "eval-1"))),
    )
    await s.evictor.drain()


async def test_a_dra_gang_is_placed_whole_once_its_victims_claims_are_gone() -> None:
    clock = Clock()
    s = scheduler(
        [*cluster(), *running(), *(member("urgent", i, 4, 10) for i in range(4))], "DRA", clock
    )
    model = s._source.cluster
    urgent = [model.pod("team-a", f"urgent-{i}") or {} for i in range(4)]
    assert urgent[0]["spec"]["resourceClaims"], "the gang asks through a claim template"
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert [model.pod("team-a", n) for n in ("ft-0", "ft-1", "eval-0", "eval-1")] == [None] * 4
    assert model.pod("team-a", "pretrain-0") is not None
    # The victims are gone, their claims not yet: the nodes stay held, nothing is planned.
    s.sweep()
    clock.now += 10
    waiting = s.filter(urgent[0], NAMES)
    assert waiting.unresolvable["a0"].endswith("; 4 nodes in leaf-a held for it while they drain")
    assert s.planner.plans == {}
    assert claim_controller(model) == [f"{g}-{i}-devices" for g in ("eval", "ft") for i in (0, 1)]
    clock.now += 10
    placed = []
    for pod in urgent:
        outcome = s.filter(pod, NAMES)
        assert len(outcome.passed) == 1
        placed.append(outcome.passed[0])
    assert sorted(placed) == NAMES[:4]
    assert s.holds.get(URGENT) is None, "the plan holds the nodes now"
    assert (s.evictor.preemptions, s.evictor.evicted) == (1, 4)


@pytest.mark.parametrize("form", FORMS)
def test_a_waiting_gang_holds_the_same_domain_in_both_forms(form: str) -> None:
    """No preemption: the gang holds the domain that needs the fewest GPUs still freed, leaf
    b here, where one unit of 8 GPUs is already gone."""
    clock = Clock()
    busy = [p for p in running() if p["metadata"]["name"] != "pretrain-3"]
    big = [member("big", i, 4, 0) for i in range(4)]
    s = scheduler([*cluster(), *busy, *big], form, clock, hold_after=0, preemption=False)
    s.filter(s._source.cluster.pod("team-a", "big-0") or {}, NAMES)
    hold = s.holds.get(("team-a", "big"))
    assert hold is not None
    assert (hold.domain, sorted(hold.nodes), hold.gpus, hold.units) == (
        "leaf-b",
        NAMES[4:],
        32,
        (),
    )


def generated() -> list[Json]:
    """clustergen's cluster, 90 % busy with jobs of priorities 0 to 2, every node healthy."""
    spec = ClusterSpec(
        nodes=64,
        seed=5,
        nodes_per_leaf=16,
        leaves_per_spine=2,
        busy_fraction=0.9,
        rail_down_fraction=0.0,
        flaky_fraction=0.0,
        no_agent_fraction=0.0,
    )
    objects = generate(spec)
    for n, obj in enumerate(o for o in objects if o.get("kind") == "Pod"):
        obj["spec"]["priority"] = n % 3
    return objects


async def test_a_generated_cluster_gives_the_same_victims_in_both_forms() -> None:
    """Its pods carry no gang keys (their workloads are not in the snapshot): each is a unit."""
    found: dict[str, tuple[str, list[str], int, Victims]] = {}
    for form in FORMS:
        objects = [*generated(), *(member("urgent", i, 12, 10) for i in range(12))]
        s = scheduler(objects, form, Clock())
        s.filter(s._source.cluster.pod("team-a", "urgent-0") or {}, [])
        hold = s.holds.get(URGENT)
        assert hold is not None, form
        found[form] = (hold.domain, sorted(hold.nodes), hold.gpus, hold.units)
        await s.evictor.drain()
    assert found["DRA"] == found["device plugins"]
    domain, held, gpus, units = found["DRA"]
    assert (domain, len(held), gpus, len(units)) == ("leaf-000", 12, 96, 10)


def test_the_units_weighed_are_the_same_in_both_forms_and_never_a_finished_pod() -> None:
    """Every unit with the same pods, priority and what its eviction frees on each node. A
    finished pod (Succeeded, Failed) still names its node but holds nothing: no unit."""
    found = {}
    for form in FORMS:
        s = scheduler(generated(), form, Clock())
        gather = Units(s._source.cluster, s.gang, s.contention.freeing, ("nvidia.com/gpu",))
        units = gather.units(lambda pod: True, ("team-a", "none"))
        found[form] = sorted((u.name, u.priority, u.pods, u.gpus, dict(u.nodes)) for u in units)
    assert found["DRA"] == found["device plugins"]
    finished = [
        o
        for o in generated()
        if o.get("kind") == "Pod" and o["status"].get("phase") in ("Succeeded", "Failed")
    ]
    assert finished, "the generated cluster has finished pods"
    names = {name for name, *_ in found["DRA"]}
    assert not any(
        f"pod {p['metadata']['namespace']}/{p['metadata']['name']}" in names for p in finished
    )
    assert len(found["DRA"]) > 50
