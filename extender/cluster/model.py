"""The extender's in-memory model of the cluster: Nodes, the pods bound to them, and what is
free on each.

kube-scheduler sends the extender node names only (`nodeCacheCapable`), so the extender keeps
its own cache. Both sources feed this one model: the live source from list + watch
(cluster/live.py), the static source from a snapshot file (cluster/snapshot.py). A Node's
view (`NodeInfo`) is rebuilt whenever the Node or the set of pods bound to it changes, and holds
everything the filters and scores need, so a scheduling call reads it and computes nothing that
does not depend on the pod.
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.cluster.devices import (
    DEFAULT_DRA_NAMES,
    DraNames,
    add_devices,
    signature,
    withheld,
)
from extender.cluster.interning import Shared
from extender.cluster.native_groups import NativeGroups
from extender.cluster.node_topology import rails_signature, read_topology
from extender.cluster.pods import (
    TERMINAL_PHASES,
    PodKey,
    extended_resources,
    pod_key,
    pod_requests,
    preempted_by_scheduler,
)
from kube_rdma.core import keys
from kube_rdma.core.dra.demand import PodDemand, pod_demand
from kube_rdma.core.dra.index import DraIndex, NodeDevices
from kube_rdma.core.dra.kinds import DEFAULT_KIND_RULES, KindRule
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.frameworks.kubernetes_scheduling import GROUP as NATIVE_GROUP
from kube_rdma.core.nodeconstraints import NodeFacts, Taint, node_facts
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Topology

log = logging.getLogger("kube_rdma.extender")


@dataclass(frozen=True)
class NodeInfo:
    """One Node as the filters and scores see it."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    requested: Mapping[str, int]
    topology: Topology | None
    topology_error: str | None = None
    """Why the node has no usable topology (no annotation, or a malformed one)."""
    pods: frozenset[PodKey] = field(default_factory=frozenset)
    taints: tuple[Taint, ...] = ()
    """The NoSchedule and NoExecute taints, with those readiness and cordons imply
    (kube_rdma.core.nodeconstraints reads them, with the name and labels)."""
    unschedulable: bool = False
    rails_key: int = field(default=0, compare=False)
    """Equal for nodes whose documents are alike to every filter and score (`rails_signature`):
    the same ports, states, rates, PCIe links and pairs, and GPUDirect RDMA paths; their rail
    summaries (extender/pairing.py) are the same."""
    state: int = field(default=0, compare=False)
    """Equal for nodes that any pod must judge and score alike: the same rails_key, topology
    error, allocatable and requested resources, fabric acceptance label and DRA devices."""
    devices: NodeDevices | None = field(default=None, compare=False)
    """The GPUs and RDMA NICs the node publishes as ResourceSlices (already counted in
    `allocatable`, and those allocated claims hold in `requested`); None without any."""
    claims_only: Mapping[str, int] = field(default_factory=dict, compare=False)
    """Of `allocatable`, the DRA devices no DeviceClass serves as an extended resource: only a
    resource claim can have them, not a container's request for the resource."""
    withheld: Mapping[str, str] = field(default_factory=dict, compare=False)
    """By extended resource, the DRA devices a taint keeps out of `allocatable`, described
    (extender/cluster/devices.py withheld)."""

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


@dataclass
class _NodeEntry:
    obj: Json
    """The Node less its topology document: the view holds it decoded, and the text is most of
    a trimmed Node."""
    topology: Topology | None
    topology_error: str | None
    digest: bytes | None
    """The topology document's digest: whether a Node's update changed it."""
    rails_key: int
    facts: NodeFacts


class Cluster:
    """Nodes and pods, with per-node accounting. Not thread-safe; one event loop owns it."""

    def __init__(
        self,
        dra_names: DraNames = DEFAULT_DRA_NAMES,
        dra_kinds: Sequence[KindRule] = DEFAULT_KIND_RULES,
    ) -> None:
        self.dra = DraIndex(dra_kinds)
        """ResourceSlices, ResourceClaims, DeviceClasses and claim templates."""
        self.selectors = Selectors()
        self._dra_names = dra_names
        self._served: frozenset[str] = frozenset()
        """The extended resources a DeviceClass serves (extendedResourceName)."""
        self._nodes: dict[str, _NodeEntry] = {}
        self._pods: dict[PodKey, Json] = {}
        self._bound: dict[PodKey, tuple[str, dict[str, int]]] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self._views: dict[str, NodeInfo] = {}
        self._interned: dict[Any, int] = {}
        self._shared = Shared()
        """The parts of topology documents nodes hold alike, one object each."""
        self._podgroups: dict[tuple[str, str, str], int] = {}
        self.native = NativeGroups()
        """Kubernetes' own Workloads and PodGroups (scheduling.k8s.io)."""
        self.generation = 0
        """Bumped on every change; lets callers cache results per generation."""
        self._changed: list[str] = []
        self._forgotten = 0
        self.pending: set[PodKey] = set()
        """Pods not bound to a node and not finished."""
        self.nominated: dict[PodKey, tuple[str, dict[str, int], int]] = {}
        """Pending pods with a nominated node: the node, their requests and their priority."""
        self.expected: dict[PodKey, str] = {}
        """Gang members kube-rdma nominates to their planned node (extender/gangs/nominating.py):
        the plan's reservation already counts what they will use there."""
        self.preempted: deque[Json] = deque(maxlen=10_000)
        """Pods deleted by kube-scheduler's preemption, not yet looked at (extender/scheduling.py
        tears down the rest of their gangs)."""

    # Nodes

    def replace_nodes(self, items: Iterable[Json]) -> None:
        fresh = {str((o.get("metadata") or {}).get("name")): o for o in items}
        for name in set(self._nodes) - set(fresh):
            self.delete_node(name)
        for obj in fresh.values():
            self.upsert_node(obj)

    def upsert_node(self, obj: Json) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        annotation = ((obj.get("metadata") or {}).get("annotations") or {}).get(keys.TOPOLOGY)
        digest = None if annotation is None else _digest(annotation)
        previous = self._nodes.get(name)
        if previous is not None and previous.digest == digest:
            topology, error, rails_key = (
                previous.topology,
                previous.topology_error,
                previous.rails_key,
            )
        else:
            topology, error = read_topology(name, annotation)
            if topology is not None:
                topology = self._shared.topology(topology)
            rails_key = self._intern(rails_signature(topology) if topology else None)
        facts = node_facts(obj)
        if annotation is not None:
            obj = _without_topology(obj)
        self._nodes[name] = _NodeEntry(obj, topology, error, digest, rails_key, facts)
        self._refresh(name)

    def delete_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        self._views.pop(name, None)
        self._note(name)
        self.generation += 1

    # Pods

    def replace_pods(self, items: Iterable[Json]) -> None:
        fresh = {pod_key(o): o for o in items}
        for key in set(self._pods) - set(fresh):
            self.delete_pod(key)
        for obj in fresh.values():
            self.upsert_pod(obj)

    def upsert_pod(self, obj: Json) -> None:
        key = pod_key(obj)
        self._pods[key] = obj
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        node = spec.get("nodeName")
        if node and status.get("phase") not in TERMINAL_PHASES:
            self._account(key, str(node), pod_requests(obj))
        else:
            self._release(key)
        self._nominate(key, None if node else status.get("nominatedNodeName"), obj)
        if node or status.get("phase") in TERMINAL_PHASES:
            self.pending.discard(key)
        else:
            self.pending.add(key)
        self.generation += 1

    def _nominate(self, key: PodKey, node: str | None, obj: Json) -> None:
        """Keep track of a pending pod kube-scheduler's preemption nominated a node for: it
        counts, as kube-scheduler counts it, as using that node for pods of no higher
        priority."""
        if node:
            self.nominated[key] = (
                str(node),
                pod_requests(obj),
                (obj.get("spec") or {}).get("priority") or 0,
            )
        else:
            self.nominated.pop(key, None)

    def nominated_use(self, priority: int) -> dict[str, dict[str, int]]:
        """node -> what pending pods of `priority` or higher, nominated there by
        kube-scheduler's preemption, will take: kube-scheduler filters other pods as if they
        ran there (RunFilterPluginsWithNominatedPods, pkg/scheduler/framework/runtime). A gang
        member nominated to its planned node is not counted: its plan holds that node for it."""
        found: dict[str, dict[str, int]] = {}
        expected = self.expected
        for key, (node, requests, theirs) in self.nominated.items():
            if theirs >= priority and expected.get(key) != node:
                held = found.setdefault(node, {})
                for resource, amount in requests.items():
                    held[resource] = held.get(resource, 0) + amount
        return found

    def delete_pod(self, key: PodKey, final: Json | None = None) -> None:
        """`final`, the pod as its deletion shows it, tells a pod kube-scheduler preempted."""
        self.nominated.pop(key, None)
        self.expected.pop(key, None)
        self.pending.discard(key)
        if final is not None and preempted_by_scheduler(final):
            self.preempted.append(final)
        self._pods.pop(key, None)
        self._release(key)
        self.generation += 1

    def pod(self, namespace: str, name: str) -> Json | None:
        return self._pods.get((namespace, name))

    def pods(self) -> Iterable[Json]:
        return self._pods.values()

    # PodGroups (scheduler-plugins and Volcano): where some gangs keep their size

    def upsert_podgroup(self, obj: Json) -> None:
        group = str(obj.get("apiVersion") or "").partition("/")[0]
        if group == NATIVE_GROUP:
            self.native.upsert(obj)
            self.generation += 1
            return
        meta = obj.get("metadata") or {}
        key = (group, str(meta.get("namespace") or "default"), str(meta.get("name")))
        size = (obj.get("spec") or {}).get("minMember")
        if isinstance(size, int) and size > 0:
            self._podgroups[key] = size
        else:
            self._podgroups.pop(key, None)
        self.generation += 1

    def replace_podgroups(self, group: str, items: Iterable[Json]) -> None:
        for key in [k for k in self._podgroups if k[0] == group]:
            del self._podgroups[key]
        for obj in items:
            self.upsert_podgroup({**obj, "apiVersion": obj.get("apiVersion") or f"{group}/"})

    def delete_podgroup(self, obj: Json) -> None:
        group = str(obj.get("apiVersion") or "").partition("/")[0]
        if group == NATIVE_GROUP:
            self.native.delete(obj)
            self.generation += 1
            return
        meta = obj.get("metadata") or {}
        self._podgroups.pop(
            (group, str(meta.get("namespace") or "default"), str(meta.get("name"))), None
        )
        self.generation += 1

    def podgroup_size(self, group: str, namespace: str, name: str) -> int | None:
        return self._podgroups.get((group, namespace, name))

    def replace_native(self, kind: str, version: str, items: Iterable[Json]) -> None:
        """Every scheduling.k8s.io Workload or PodGroup of one version, as listed."""
        self.native.replace(kind, version, items)
        self.generation += 1

    # DRA objects (resource.k8s.io): each update rebuilds the views of the nodes it touched

    def dra_changed(self, nodes: set[str]) -> None:
        served = self.dra.extended_resources()
        if served != self._served:
            # Which resources a DeviceClass serves changes what every DRA node offers a pod
            # asking for them in its containers.
            self._served = served
            nodes = nodes | {n for n in self._nodes if self.dra.node(n) is not None}
        for name in nodes:
            self._refresh(name)
        self.generation += 1

    def claim_demand(self, pod: Json) -> PodDemand:
        """What the pod's resource claims still ask of a node."""
        return pod_demand(pod, self.dra, self.selectors)

    # Views

    def node(self, name: str) -> NodeInfo | None:
        return self._views.get(name)

    def nodes(self) -> Iterable[NodeInfo]:
        return self._views.values()

    def node_object(self, name: str) -> Json | None:
        """The Node as given, less its topology document (its view's `topology`)."""
        entry = self._nodes.get(name)
        return entry.obj if entry else None

    def _account(self, key: PodKey, node: str, requests: dict[str, int]) -> None:
        current = self._bound.get(key)
        if current == (node, requests):
            return
        self._release(key)
        self._bound[key] = (node, requests)
        self._by_node.setdefault(node, set()).add(key)
        self._refresh(node)

    def _release(self, key: PodKey) -> None:
        current = self._bound.pop(key, None)
        if current is None:
            return
        node = current[0]
        self._by_node.get(node, set()).discard(key)
        self._refresh(node)

    def _refresh(self, name: str) -> None:
        self.generation += 1
        entry = self._nodes.get(name)
        if entry is None:
            return
        keys_ = frozenset(self._by_node.get(name, ()))
        requested: dict[str, int] = {}
        for key in keys_:
            for resource, amount in self._bound[key][1].items():
                requested[resource] = requested.get(resource, 0) + amount
        meta = entry.obj.get("metadata") or {}
        allocatable = extended_resources((entry.obj.get("status") or {}).get("allocatable"))
        devices = self.dra.node(name)
        published = add_devices(allocatable, requested, devices, self._dra_names)
        claims_only = {r: n for r, n in published.items() if r not in self._served}
        labels = dict(meta.get("labels") or {})
        state = (
            entry.rails_key,
            entry.topology_error,
            _sorted(allocatable),
            _sorted(requested),
            labels.get(keys.ACCEPTANCE),
            signature(devices),
            _sorted(claims_only),
        )
        self._note(name)
        self._views[name] = NodeInfo(
            name=name,
            labels=labels,
            allocatable=allocatable,
            requested=requested,
            topology=entry.topology,
            topology_error=entry.topology_error,
            pods=keys_,
            taints=entry.facts.taints,
            unschedulable=entry.facts.unschedulable,
            rails_key=entry.rails_key,
            state=self._intern(state),
            devices=devices,
            claims_only=claims_only,
            withheld=withheld(devices, self._dra_names),
        )

    def _intern(self, value: Any) -> int:
        """A small int standing for `value`, equal for equal values."""
        number = self._interned.get(value)
        if number is None:
            number = self._interned[value] = len(self._interned) + 1
        return number

    @property
    def views(self) -> Mapping[str, NodeInfo]:
        """Node name -> view, for callers that look up thousands of names per call."""
        return self._views

    # Changes: what callers keeping answers per node (extender/answers.py) must redo

    @property
    def changes(self) -> int:
        """How many times a node's view was replaced or dropped, ever."""
        return self._forgotten + len(self._changed)

    def changed_since(self, changes: int) -> list[str] | None:
        """The nodes whose view changed after `changes` (with repeats), oldest first; None when
        that is too long ago to remember: the caller starts over from `views`."""
        if changes < self._forgotten:
            return None
        return self._changed[changes - self._forgotten :]

    def _note(self, name: str) -> None:
        self._changed.append(name)
        # Remember about two changes per node: a caller further behind redoes every node.
        if len(self._changed) > 2 * len(self._nodes) + 1024:
            half = len(self._changed) // 2
            del self._changed[:half]
            self._forgotten += half


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _without_topology(obj: Json) -> Json:
    meta = obj.get("metadata") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != keys.TOPOLOGY}
    if annotations:
        meta = {**meta, "annotations": annotations}
    else:
        meta = {k: v for k, v in meta.items() if k != "annotations"}
    return {**obj, "metadata": meta}


def _sorted(amounts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(amounts.items()))
