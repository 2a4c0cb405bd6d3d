"""Gangs in shared clusters: members planned only on nodes they may use (node selectors,
required node affinity, taints, cordons, readiness), members with different constraints each
within their own, and the two reasons kube-scheduler's candidates may lack a planned node."""

from __future__ import annotations

from typing import Any

from extender.book.reservations import Reservations
from extender.cluster.model import Cluster
from extender.engine import Engine, FilterOutcome
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings, Planner
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.nodeconstraints import NodeConstraints, node_facts
from kube_rdma.core.objects import Json
from testbed.builders import nodes

LEAF = keys.LEAF
TOPOLOGY = nodes.hgx()
TAINT = {"key": "dedicated", "value": "train", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "train", "effect": "NoSchedule"}


def node(name: str, leaf: str, pool: str | None = None, **spec: Any) -> Json:
    labels = {LEAF: leaf, **({"pool": pool} if pool else {})}
    obj = nodes.node(name, TOPOLOGY, labels=labels)
    return {**obj, "spec": spec} if spec else obj


def not_ready(obj: Json) -> Json:
    conditions = [{"type": "Ready", "status": "False"}]
    return {**obj, "status": {**obj["status"], "conditions": conditions}}


def member(gang: Gang, name: str, **spec: Any) -> Json:
    annotations = {keys.GANG: gang.name, keys.GANG_SIZE: str(gang.size)}
    pod = nodes.pod(f"{gang.name}-{name}", annotations=annotations)
    return {**pod, "spec": {**pod["spec"], **spec}}


class Shared:
    """A planner over the given nodes and pods; a gang's members are the cache's pods that
    name it, as the extender's Scheduler finds them."""

    def __init__(self, node_objects: list[Json], pods: list[Json], **settings: Any) -> None:
        self.nodes = node_objects
        self.cluster = Cluster()
        self.cluster.replace_nodes(node_objects)
        self.cluster.replace_pods(pods)
        book = Reservations(LEAF)
        engine = Engine(self.cluster, lambda: DEFAULT, book)
        gangs = GangSettings(**settings)
        self.planner = Planner(
            self.cluster, engine, book, gangs, clock=lambda: 1000.0, members=self.members
        )

    def members(self, gang: Gang) -> list[Json]:
        return [
            p
            for p in self.cluster.pods()
            if p["metadata"]["annotations"].get(keys.GANG) == gang.name
            and not p["spec"].get("nodeName")
        ]

    def candidates(self, pod: Json) -> list[str]:
        """What kube-scheduler sends: the nodes its in-tree filters admit."""
        constraints = NodeConstraints.of(pod)
        return [
            n["metadata"]["name"] for n in self.nodes if constraints.refusal(node_facts(n)) is None
        ]

    def filter(self, gang: Gang, pod: Json, names: list[str] | None = None) -> FilterOutcome:
        outcome = self.planner.filter(pod_view(pod), gang, names or self.candidates(pod))
        assert outcome is not None
        return outcome

    def steered(self, gang: Gang, pod: Json) -> str:
        """The one node the member is steered to."""
        outcome = self.filter(gang, pod)
        assert len(outcome.passed) == 1, outcome
        return outcome.passed[0]


def test_a_pinned_gang_is_planned_in_its_pool_at_the_first_try() -> None:
    """12 nodes; the tightest leaf (4 nodes) is pool b; a 4-pod gang asks for pool a."""
    cluster = [node(f"n{i:02}", "leaf-1", "b") for i in range(4)]
    cluster += [node(f"n{i:02}", "leaf-2", "a") for i in range(4, 12)]
    gang = Gang("team-a", "pinned", 4, keys.GANG)
    pods = [member(gang, str(i), nodeSelector={"pool": "a"}) for i in range(4)]
    s = Shared(cluster, pods)
    assert [s.steered(gang, p) for p in pods] == ["n04", "n05", "n06", "n07"]
    plan = s.planner.plans[gang.key]
    assert (plan.domain, plan.absent) == ("leaf-2", {}), "no member was ever refused"


def test_a_master_pinned_to_one_pool_and_workers_elsewhere() -> None:
    """leaf-1 has no pool-a node for the master; leaf-2 has one, and room for the workers."""
    cluster = [node(f"n{i}", "leaf-1", "b") for i in range(4)]
    cluster += [node("n4", "leaf-2", "a")] + [node(f"n{i}", "leaf-2", "b") for i in (5, 6, 7)]
    cluster += [node(f"n{i}", "leaf-3", "a") for i in range(8, 13)]
    gang = Gang("team-a", "job", 4, keys.GANG)
    master = member(gang, "master", nodeSelector={"pool": "a"})
    workers = [member(gang, f"worker-{i}") for i in range(3)]
    s = Shared(cluster, [master, *workers])
    # The workers are filtered first; the master still finds the one pool-a node kept for it.
    assert [s.steered(gang, w) for w in workers] == ["n5", "n6", "n7"]
    assert s.steered(gang, master) == "n4"
    plan = s.planner.plans[gang.key]
    assert (plan.domain, plan.slots) == ("leaf-2", ["n4", "n5", "n6", "n7"])


def test_a_tainted_leaf_tolerated_by_the_workers_only() -> None:
    """The tight leaf has one untainted node: the master takes it, the workers the tainted."""
    cluster = [node("t0", "leaf-1"), node("t1", "leaf-1", taints=[TAINT])]
    cluster += [node("t2", "leaf-1", taints=[TAINT])]
    cluster += [node(f"u{i}", "leaf-2") for i in range(4)]
    gang = Gang("team-a", "tol", 3, keys.GANG)
    master = member(gang, "master")
    workers = [member(gang, f"worker-{i}", tolerations=[TOLERATION]) for i in range(2)]
    s = Shared(cluster, [*workers, master])
    assert [s.steered(gang, p) for p in [*workers, master]] == ["t1", "t2", "t0"]
    assert s.planner.plans[gang.key].domain == "leaf-1"


TWO_LEAVES = [node(f"a{i}", "leaf-a") for i in range(4)] + [node(f"b{i}", "leaf-b") for i in (0, 1)]


def test_a_cordoned_node_is_never_planned() -> None:
    cluster = [*TWO_LEAVES[:4], node("b0", "leaf-b", unschedulable=True), TWO_LEAVES[5]]
    gang = Gang("team-a", "pair", 2, keys.GANG)
    pods = [member(gang, str(i)) for i in range(2)]
    s = Shared(cluster, pods)
    assert [s.steered(gang, p) for p in pods] == ["a0", "a1"]


def test_a_not_ready_node_is_never_planned() -> None:
    cluster = [*TWO_LEAVES[:5], not_ready(TWO_LEAVES[5])]
    gang = Gang("team-a", "pair", 2, keys.GANG)
    pods = [member(gang, str(i)) for i in range(2)]
    s = Shared(cluster, pods)
    assert [s.steered(gang, p) for p in pods] == ["a0", "a1"]


def test_a_node_cordoned_after_planning_has_the_gang_planned_again() -> None:
    gang = Gang("team-a", "pair", 2, keys.GANG)
    pods = [member(gang, str(i)) for i in range(2)]
    s = Shared(TWO_LEAVES, pods)
    assert s.steered(gang, pods[0]) == "b0"
    s.cluster.upsert_node(node("b1", "leaf-b", unschedulable=True))
    s.nodes = [*TWO_LEAVES[:5], node("b1", "leaf-b", unschedulable=True)]
    assert s.steered(gang, pods[1]) == "a0", "the first member filtered takes the first slot"
    assert s.planner.plans[gang.key].slots == ["a0", "a1"]


def test_members_not_created_yet_are_assumed_like_the_most_common() -> None:
    """Two of four members exist, both pinned to pool a: the plan keeps all four there. (Its
    owning workload vouches for the two not created yet, extender/gangs/quorum.py.)"""
    cluster = [node(f"b{i}", "leaf-1", "b") for i in range(4)]
    cluster += [node(f"a{i}", "leaf-2", "a") for i in range(6)]
    gang = Gang("team-a", "early", 4, keys.GANG, vouched=True)
    pods = [member(gang, str(i), nodeSelector={"pool": "a"}) for i in range(2)]
    s = Shared(cluster, pods)
    s.steered(gang, pods[0])
    assert s.planner.plans[gang.key].slots == ["a0", "a1", "a2", "a3"]


def test_a_late_member_unlike_the_others_has_the_gang_planned_again() -> None:
    cluster = [node(f"n{i}", "leaf-1", "b") for i in range(3)]
    cluster += [node("n3", "leaf-2", "a")] + [node(f"n{i}", "leaf-2", "b") for i in (4, 5)]
    gang = Gang("team-a", "late", 3, keys.GANG, vouched=True)  # its owner vouches for the master
    workers = [member(gang, f"worker-{i}") for i in range(2)]
    s = Shared(cluster, workers)
    assert s.steered(gang, workers[0]) == "n0"  # planned for three workers in leaf-1
    master = member(gang, "master", nodeSelector={"pool": "a"})
    s.cluster.upsert_pod(master)
    assert s.steered(gang, master) == "n3"
    plan = s.planner.plans[gang.key]
    assert (plan.domain, plan.slots) == ("leaf-2", ["n3", "n4", "n5"])
    assert s.steered(gang, workers[0]) == "n4", "the worker follows the new plan"


def many(count: int) -> list[Json]:
    return [node(f"n{i:03}", f"leaf-{i // 8}") for i in range(count)]


def test_a_planned_node_left_out_of_a_sample_is_waited_for() -> None:
    """120 nodes, kube-scheduler's adaptive percentage: it looks for 100 feasible nodes
    (max(100, 120 x 50 %)) and sends those; the planned node may be in the next sample."""
    gang = Gang("team-a", "pair", 2, keys.GANG)
    pods = [member(gang, str(i)) for i in range(2)]
    s = Shared(many(120), pods, percentage_of_nodes_to_score=0, absent_limit=2)
    assert s.steered(gang, pods[0]) == "n000"
    sample = [f"n{i:03}" for i in range(20, 120)]
    reason = (
        "gang team-a/pair: planned node n000 was not among the 100 candidates kube-scheduler "
        "sent (set percentageOfNodesToScore: 100 for the RDMA scheduler)"
    )
    assert s.filter(gang, pods[0], sample) == FilterOutcome([], {}, dict.fromkeys(sample, reason))
    assert s.planner.plans[gang.key].slots == ["n000", "n001"], "one miss: the plan is kept"
    s.filter(gang, pods[0], sample)
    assert s.planner.plans[gang.key].slots == ["n001", "n002"], "two misses: planned again"


def test_a_planned_node_ruled_out_is_avoided_at_once() -> None:
    """99 candidates of 120 nodes, fewer than the 100 kube-scheduler looks for: that is every
    node that passed its filters, so n000 was ruled out."""
    gang = Gang("team-a", "pair", 2, keys.GANG)
    pods = [member(gang, str(i)) for i in range(2)]
    s = Shared(many(120), pods, percentage_of_nodes_to_score=0)
    assert s.steered(gang, pods[0]) == "n000"
    candidates = [f"n{i:03}" for i in range(1, 100)]
    reason = (
        "gang team-a/pair: kube-scheduler ruled out planned node n000: its 99 candidates are "
        "every node that passed its filters, so a check the extender cannot see refused it "
        "(another plugin, pod affinity, volumes, ports); the gang is planned again without n000"
    )
    outcome = s.filter(gang, pods[0], candidates)
    assert outcome == FilterOutcome([], {}, dict.fromkeys(candidates, reason))
    plan = s.planner.plans[gang.key]
    assert (plan.slots, plan.ruled_out) == (["n001", "n002"], frozenset({"n000"}))
