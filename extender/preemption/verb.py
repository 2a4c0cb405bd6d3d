"""kube-scheduler's preemption, filtered by what the extender knows (the preempt verb).

kube-scheduler calls the verb for a pod it wants to preempt for, with each candidate node and
the victims it chose there (pkg/scheduler/framework/preemption/preemption.go, callExtenders),
and afterwards picks one node of those the extender kept. Kept here are the nodes where the pod
would pass the extender's own checks (RDMA fit, DRA devices, the capacity gang plans hold)
once that node's victims are gone, and that no hold of the same or a higher priority covers.
What victims free is counted by extender/preemption/freeing.py: their requests, and the devices of
the resource claims that go with them. Victims are answered as the pods of that node among
those kube-scheduler named; a node left with none is dropped (kube-scheduler fails the whole
preemption on an empty list). Nodes whose victims include no gang member are preferred: where
any such node is kept, the others are dropped, so a gang is broken only where nothing else
would do; and then the rest of that gang is torn down when its member is seen deleted
(extender/scheduling.py).

A node whose victims include a member of a scheduling.k8s.io group whose disruptionMode is All
is never kept: that group is evicted whole or not at all, and a node's victims are never all of
it. Members of a group whose disruptionMode is Single go one by one, as pods of no gang.

Gang members get no node at all: a gang preempts whole, through the extender's own gang
preemption (extender/preemption/contention.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.book.holds import HoldBook
from extender.cluster.devices import DEFAULT_DRA_NAMES
from extender.cluster.model import Cluster, NodeInfo
from extender.engine import Engine
from extender.gangs.identity import Gang, Singleton
from extender.podview import PodView
from extender.preemption.freeing import Freeing
from extender.preemption.priority import disrupted_one_by_one, disrupted_whole, pod_priority
from extender.protocol import MetaVictims
from kube_rdma.core.objects import Json


def preemption_candidates(
    engine: Engine,
    cluster: Cluster,
    holds: HoldBook,
    gang_of: Callable[[Json], Gang | Singleton],
    view: PodView,
    pod: Json,
    victims: Mapping[str, MetaVictims],
    freeing: Freeing | None = None,
) -> dict[str, MetaVictims]:
    freeing = freeing or Freeing(cluster, DEFAULT_DRA_NAMES)
    priority = pod_priority(pod)
    kept: dict[str, MetaVictims] = {}
    breaks_gang: set[str] = set()
    for name, asked in victims.items():
        node = cluster.node(name)
        if node is None or holds.blocking(name, priority, None) is not None:
            continue
        on_node = _pods_by_uid(cluster, node)
        pods = [on_node[uid] for uid in asked.uids if uid in on_node]
        if not pods or not engine.verdict_on(view, freeing.without(node, pods)).ok:
            continue
        kept[name] = MetaVictims(tuple(_uid(p) for p in pods), asked.pdb_violations)
        gangs = [g for p in pods if isinstance(g := gang_of(p), Gang)]
        if any(disrupted_whole(g) for g in gangs):
            del kept[name]  # its group's disruptionMode is All: never a part of it
        elif any(not disrupted_one_by_one(g) for g in gangs):
            breaks_gang.add(name)
    whole = {n: v for n, v in kept.items() if n not in breaks_gang}
    return whole or kept


def _pods_by_uid(cluster: Cluster, node: NodeInfo) -> dict[str, Json]:
    found = {}
    for key in node.pods:
        pod = cluster.pod(*key)
        if pod is not None and _uid(pod):
            found[_uid(pod)] = pod
    return found


def _uid(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")
