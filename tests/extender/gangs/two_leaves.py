"""Two leaves of HGX nodes (a0-a3 in leaf-a, b0-b1 in leaf-b) with a gang planner over them,
a clock the test moves, and the gang members as pods."""

from __future__ import annotations

from extender.book.reservations import Reservations
from extender.cluster.model import Cluster
from extender.engine import Engine, FilterOutcome
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings, Planner
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes

LEAF = keys.LEAF
NAMES = ["a0", "a1", "a2", "a3", "b0", "b1"]
PAIR = Gang("team-a", "pair", 2, keys.GANG)
TRIO = Gang("team-a", "trio", 3, keys.GANG)
MEMBER = {"nvidia.com/gpu": 8, "rdma/hca": 1}
"""What one 8-GPU member holds on its planned node."""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Setup:
    def __init__(self, settings: GangSettings, pods: list[Json]) -> None:
        self.cluster = Cluster()
        self.cluster.replace_nodes(
            [nodes.node(f"a{i}", nodes.hgx(), labels={LEAF: "leaf-a"}) for i in range(4)]
            + [nodes.node(f"b{i}", nodes.hgx(), labels={LEAF: "leaf-b"}) for i in range(2)]
        )
        self.cluster.replace_pods(pods)
        self.book = Reservations(LEAF)
        self.clock = Clock()
        engine = Engine(self.cluster, lambda: DEFAULT, self.book)
        self.planner = Planner(self.cluster, engine, self.book, settings, self.clock)

    def filter(self, gang: Gang, index: int, names: list[str] = NAMES) -> FilterOutcome | None:
        pod = pod_view(member(gang, index))
        return self.planner.filter(pod, gang, names)

    def bind(self, gang: Gang, index: int, node: str) -> None:
        self.cluster.upsert_pod(member(gang, index, node))
        self.planner.bound(("team-a", f"{gang.name}-{index}"), gang, node)


def member(gang: Gang, index: int, node: str | None = None) -> Json:
    annotations = {keys.GANG: gang.name, keys.GANG_SIZE: str(gang.size)}
    return nodes.pod(f"{gang.name}-{index}", annotations=annotations, node_name=node)


def setup(gang: Gang, settings: GangSettings | None = None) -> Setup:
    return Setup(settings or GangSettings(), [member(gang, i) for i in range(gang.size + 1)])
