"""Gang members nominated to their planned nodes: who is nominated where and when, what the
filter answers while a nomination is on its way or out of date, what is taken back, and that a
member nominated to its node is not counted twice against it."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.nominations import ModelNominations, NominationFailed
from extender.cluster.snapshot import SnapshotSource
from extender.contention_metrics import ContentionCollector
from extender.engine import FilterOutcome
from extender.gangs.nominating import Nominator
from extender.gangs.planner import GangSettings
from extender.gangs.sampling import moved_reason, nominating_reason
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.gangs.two_leaves import PAIR, TRIO, Setup, member

PLANNED = "gang team-a/pair has this member planned on {} (plan: 2 pods on 2 nodes in leaf-b)"


class Written(ModelNominations):
    """The apiserver as the nominations see it: each write lands in the cluster model, as its
    watch would bring it back; the writes are listed, and pods named in `refused` refused."""

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup.cluster)
        self.writes: list[tuple[str, str | None]] = []
        self.refused: set[str] = set()

    async def nominate(self, namespace: str, name: str, uid: str, node: str | None) -> None:
        if name in self.refused:
            raise NominationFailed(f"pod {namespace}/{name}: forbidden", gone=False)
        await super().nominate(namespace, name, uid, node)
        self.writes.append((name, node))


def nominating(*pods: Json) -> tuple[Setup, Written]:
    s = Setup(GangSettings(percentage_of_nodes_to_score=0), list(pods))
    written = Written(s)
    s.planner.nominator = Nominator(s.cluster, written)
    s.planner._members = lambda gang: [  # as Core.waiting_members reads the cache
        p
        for p in s.cluster.pods()
        if p["metadata"]["name"].startswith(gang.name) and not p["spec"].get("nodeName")
    ]
    return s, written


def pair() -> tuple[Setup, Written]:
    return nominating(*(member(PAIR, i) for i in range(2)))


def outcome(names: list[str], reason: str) -> FilterOutcome:
    return FilterOutcome([], {}, dict.fromkeys(names, reason))


async def test_each_pending_member_is_nominated_to_its_own_planned_node() -> None:
    s, written = pair()
    assert s.filter(PAIR, 0) == FilterOutcome(
        ["b0"], {}, {n: PLANNED.format("b0") for n in ["a0", "a1", "a2", "a3", "b1"]}
    )
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    assert sorted(written.writes) == [("pair-0", "b0"), ("pair-1", "b1")]
    assert s.planner.plans[PAIR.key].assigned == {("team-a", "pair-0"): 0, ("team-a", "pair-1"): 1}
    # Nominated where the plan holds them, they are not counted again against their nodes.
    assert set(s.cluster.nominated) == {("team-a", "pair-0"), ("team-a", "pair-1")}
    assert s.cluster.nominated_use(0) == {}
    # kube-scheduler tries the nominated node first: one name, which passes.
    assert s.filter(PAIR, 1, ["b1"]) == FilterOutcome(["b1"], {}, {})


async def test_the_member_that_made_the_plan_gets_a_node_it_was_sent() -> None:
    s, written = pair()
    assert s.filter(PAIR, 1, ["a3", "b1"]) == FilterOutcome(
        ["b1"], {}, {"a3": PLANNED.format("b1")}
    )
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    assert sorted(written.writes) == [("pair-0", "b0"), ("pair-1", "b1")]


def test_a_member_whose_nomination_is_on_its_way_waits_for_it_without_a_new_plan() -> None:
    s, written = pair()  # no event loop: the writes have not started
    s.filter(PAIR, 0)
    plan = s.planner.plans[PAIR.key]
    answer = s.filter(PAIR, 1, ["a0", "a1"])
    assert answer == outcome(["a0", "a1"], nominating_reason("team-a/pair", "b1"))
    assert s.planner.plans[PAIR.key] is plan
    assert plan.absent == {}
    assert written.writes == []


async def test_a_nomination_the_plan_moved_from_fails_quietly_for_the_search_that_follows() -> None:
    s, _ = pair()
    s.filter(PAIR, 0)
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    plan = s.planner.plans[PAIR.key]
    # Another component (kube-scheduler's preemption) nominated the member elsewhere.
    pod = s.cluster.pod("team-a", "pair-1")
    assert pod is not None
    s.cluster.upsert_pod({**pod, "status": {**pod["status"], "nominatedNodeName": "a3"}})
    answer = s.filter(PAIR, 1, ["a3"])
    assert answer == outcome(["a3"], moved_reason("team-a/pair", "a3", "b1"))
    assert s.planner.plans[PAIR.key] is plan, "not ruled out: one name is not a search"
    assert plan.ruled_out == frozenset()


async def test_a_dropped_plan_takes_its_nominations_back_from_pending_members_only() -> None:
    s, written = pair()
    s.filter(PAIR, 0)
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    s.bind(PAIR, 0, "b0")
    s.planner.drop(PAIR.key)
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    assert written.writes[-1] == ("pair-1", None)
    assert ("pair-0", None) not in written.writes, "a bound member keeps what it has"
    assert s.cluster.expected == {}
    assert s.cluster.nominated == {}


async def test_a_new_plan_before_the_writes_writes_only_the_new_nominations() -> None:
    s, written = pair()
    s.filter(PAIR, 0)
    s.planner.drop(PAIR.key)  # withdrawn before anything was written: nothing is due
    assert s.filter(PAIR, 0) is not None
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    assert sorted(written.writes) == [("pair-0", "b0"), ("pair-1", "b1")]


async def test_a_refused_nomination_is_counted_and_its_member_counted_as_any_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s, written = pair()
    written.refused.add("pair-1")
    s.filter(PAIR, 0)
    nominator = s.planner.nominator
    assert nominator is not None
    await nominator.drain()
    assert (nominator.written, nominator.failed) == (1, 1)
    assert s.cluster.expected == {("team-a", "pair-0"): "b0"}
    assert nominator.wanted(("team-a", "pair-1")) is None
    [warned] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warned.getMessage() == (
        "could not nominate team-a/pair-1 to b1: pod team-a/pair-1: forbidden"
    )


@pytest.mark.parametrize("nominated", ["b0", "a0"])
async def test_a_pod_nominated_elsewhere_or_of_another_gang_still_counts(nominated: str) -> None:
    trio = [member(TRIO, i) for i in range(3)]
    s, _ = nominating(*(member(PAIR, i) for i in range(2)), *trio)
    s.filter(PAIR, 0)
    await s.planner.nominator.drain()  # type: ignore[union-attr]
    pod = trio[0]
    s.cluster.upsert_pod({**pod, "status": {**pod["status"], "nominatedNodeName": nominated}})
    assert s.cluster.nominated_use(0) == {nominated: {"nvidia.com/gpu": 8, "rdma/hca": 1}}


async def test_the_app_nominates_through_its_writer_and_counts_the_writes() -> None:
    pods = [member(PAIR, i) for i in range(2)]
    nodes_ = [nodes.node(f"gpu-{i}", nodes.hgx()) for i in range(1, 4)]
    source = SnapshotSource([*nodes_, *pods])
    app = create_app(Settings(), source, nominations=ModelNominations(source.cluster))
    scheduler = app[EXTENDER].scheduler
    outcome = scheduler.filter(pods[0], ["gpu-1", "gpu-2", "gpu-3"])
    assert len(outcome.passed) == 1
    assert scheduler.planner.nominator is not None
    await scheduler.planner.nominator.drain()
    planned = scheduler.planner.plans[PAIR.key].slots
    assert {
        p["metadata"]["name"]: p["status"]["nominatedNodeName"] for p in source.cluster.pods()
    } == {"pair-0": planned[0], "pair-1": planned[1]}
    registry = CollectorRegistry()
    registry.register(ContentionCollector(scheduler, lambda: 0.0))
    written = registry.get_sample_value("kube_rdma_gang_nominations_total", {"result": "written"})
    assert written == 2
