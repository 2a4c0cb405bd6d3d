"""A gang planner over any nodes, with gangs whose members all arrive and bind as planned: for
the tests that compare where gangs land across vocabularies and on NVL72-style clusters."""

from __future__ import annotations

from extender.book.reservations import Reservations
from extender.cluster import dra_objects
from extender.cluster.model import Cluster
from extender.engine import Engine, FilterOutcome
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings, Planner
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes


class Fabric:
    def __init__(
        self,
        objects: list[Json],
        settings: GangSettings,
        owners: dict[str, Json] | None = None,
    ) -> None:
        self.cluster = Cluster()
        self.cluster.replace_nodes([o for o in objects if o.get("kind") == "Node"])
        for kind in sorted(dra_objects.KINDS):
            dra_objects.replace(self.cluster, kind, [o for o in objects if o.get("kind") == kind])
        self.pods = [o for o in objects if o.get("kind") == "Pod"]
        self.cluster.replace_pods(self.pods)
        self.book = Reservations(settings.domains[0] if settings.domains else None)
        engine = Engine(self.cluster, lambda: DEFAULT, self.book)
        owners = owners or {}
        self.planner = Planner(
            self.cluster,
            engine,
            self.book,
            settings,
            members=self._waiting,
            top_owner=lambda pod: owners.get(_name(pod)),
        )
        self.names = sorted(n.name for n in self.cluster.nodes())

    def _waiting(self, gang: Gang) -> list[Json]:
        """The gang's members not bound yet, as the extender's pod cache gives them."""
        return [
            p
            for p in self.cluster.pods()
            if p["metadata"].get("annotations", {}).get(keys.GANG) == gang.name
            and not p["spec"].get("nodeName")
        ]

    def submit(self, members: list[Json]) -> None:
        self.pods += members
        self.cluster.replace_pods(self.pods)

    def filter(self, gang: Gang, member: Json) -> FilterOutcome | None:
        return self.planner.filter(pod_view(member), gang, self.names)

    def place(self, gang: Gang, members: list[Json]) -> list[str] | str:
        """Each member's node, in order, every member bound where it was planned; the reason
        when the gang gets no plan."""
        self.submit(members)
        placed = []
        for member in members:
            outcome = self.filter(gang, member)
            assert outcome is not None
            if not outcome.passed:
                return next(iter({**outcome.failed, **outcome.unresolvable}.values()))
            placed.append(outcome.passed[0])
        for member, node in zip(members, placed, strict=True):
            bound = {**member, "spec": {**member["spec"], "nodeName": node}}
            self.pods = [bound if p is member else p for p in self.pods]
            self.cluster.upsert_pod(bound)
            self.planner.bound(("team-a", member["metadata"]["name"]), gang, node)
        return placed


def gang_members(
    name: str,
    size: int,
    gpus: int = 8,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> tuple[Gang, list[Json]]:
    """A gang of `size` pods named NAME-<i>, pod i labelled with completion index i."""
    gang = Gang("team-a", name, size, keys.GANG)
    members = []
    for i in range(size):
        said = {keys.GANG: name, keys.GANG_SIZE: str(size), **(annotations or {})}
        pod = nodes.pod(f"{name}-{i}", gpus=gpus, annotations=said)
        pod["metadata"]["labels"] = {
            "batch.kubernetes.io/job-completion-index": str(i),
            **(labels or {}),
        }
        members.append(pod)
    return gang, members


def _name(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("name"))
