"""The DRA objects of a cluster, indexed for the questions the extender and the simulator ask:
which GPUs and NICs each node publishes, which are held by allocated claims, and what a
DeviceClass or claim template says.

Every update returns the nodes whose devices or allocations it changed, so that the caller
rebuilds only their views. A claim counts its devices once however many pods share it, and an
`adminAccess` result holds nothing (ResourceClaim status: admin access "does not count
against" the device, k8s.io/api resource/v1 DeviceRequestAllocationResult.AdminAccess).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kube_rdma.core.dra.kinds import DEFAULT_KIND_RULES, Kind, KindRule, kind_of
from kube_rdma.core.dra.pools import PoolKey, SliceEntry, pool_state, read_slice
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import Device, DeviceId, allocated_devices, cel_expressions
from kube_rdma.core.objects import Json

ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class NodeDevices:
    """One node's published GPUs and NICs (complete pools only) and what claims hold."""

    devices: tuple[tuple[Device, Kind], ...]
    held: frozenset[DeviceId]
    notes: tuple[str, ...] = ()
    """Pools that do not count yet, and why."""

    def count(self, kind: Kind) -> int:
        return sum(1 for _, k in self.devices if k == kind)

    def in_use(self, kind: Kind) -> int:
        return sum(1 for d, k in self.devices if k == kind and d.id in self.held)

    def free(self) -> list[Device]:
        return [d for d, _ in self.devices if d.id not in self.held]


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    extended_resource: str | None = None


def key_of(obj: Json) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class DraIndex:
    def __init__(self, rules: Sequence[KindRule] = DEFAULT_KIND_RULES) -> None:
        self._rules = tuple(rules)
        self._slices: dict[str, SliceEntry] = {}
        self._pools: dict[PoolKey, set[str]] = {}
        self._pool_node: dict[PoolKey, str] = {}
        self.claims: dict[ObjectKey, Json] = {}
        self._claim_devices: dict[ObjectKey, frozenset[DeviceId]] = {}
        self._holders: dict[DeviceId, set[ObjectKey]] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.templates: dict[ObjectKey, Json] = {}
        self._nodes: dict[str, NodeDevices] = {}
        self._samples: dict[tuple[str, Kind | None], tuple[Device, ...]] = {}
        """(driver, kind) -> the devices of that kind (None: neither a GPU nor an RDMA NIC, a
        MIG slice or a plain netdev) the first node publishing one has."""

    # ResourceSlices

    def upsert_slice(self, obj: Json) -> set[str]:
        name = key_of(obj)[1]
        touched = self.delete_slice(name)
        entry = read_slice(obj)
        if entry is not None:
            self._slices[name] = entry
            self._pools.setdefault(entry.pool, set()).add(name)
            self._pool_node[entry.pool] = entry.node
            touched.add(entry.node)
        return self._rebuild(touched)

    def delete_slice(self, name: str) -> set[str]:
        entry = self._slices.pop(name, None)
        if entry is None:
            return set()
        members = self._pools.get(entry.pool, set())
        members.discard(name)
        if not members:
            self._pools.pop(entry.pool, None)
            self._pool_node.pop(entry.pool, None)
        return self._rebuild({entry.node})

    def replace_slices(self, items: Iterable[Json]) -> set[str]:
        touched = {e.node for e in self._slices.values()}
        self._slices.clear()
        self._pools.clear()
        self._pool_node.clear()
        for obj in items:
            entry = read_slice(obj)
            if entry is not None:
                name = key_of(obj)[1]
                self._slices[name] = entry
                self._pools.setdefault(entry.pool, set()).add(name)
                self._pool_node[entry.pool] = entry.node
                touched.add(entry.node)
        return self._rebuild(touched)

    # ResourceClaims

    def upsert_claim(self, obj: Json) -> set[str]:
        key = key_of(obj)
        touched = self._drop_claim(key)
        self.claims[key] = obj
        held = frozenset(d for d, admin in allocated_devices(obj) if not admin)
        self._claim_devices[key] = held
        for device in held:
            self._holders.setdefault(device, set()).add(key)
        return self._rebuild(touched | self._nodes_of(held))

    def delete_claim(self, key: ObjectKey) -> set[str]:
        touched = self._drop_claim(key)
        self.claims.pop(key, None)
        return self._rebuild(touched)

    def replace_claims(self, items: Iterable[Json]) -> set[str]:
        touched: set[str] = set()
        for key in list(self.claims):
            touched |= self._drop_claim(key)
        self.claims.clear()
        for obj in items:
            touched |= self.upsert_claim(obj)
        return self._rebuild(touched)

    def _drop_claim(self, key: ObjectKey) -> set[str]:
        held = self._claim_devices.pop(key, frozenset())
        for device in held:
            holders = self._holders.get(device)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del self._holders[device]
        return self._nodes_of(held)

    def _nodes_of(self, devices: Iterable[DeviceId]) -> set[str]:
        return {n for d in devices if (n := self._pool_node.get((d[0], d[1]))) is not None}

    def claim_node(self, key: ObjectKey) -> str | None:
        """The node an allocated claim's devices are on, None when it holds none."""
        nodes = self._nodes_of(self._claim_devices.get(key, ()))
        return min(nodes) if nodes else None

    # DeviceClasses and ResourceClaimTemplates

    def upsert_class(self, obj: Json) -> None:
        spec = obj.get("spec") or {}
        name = key_of(obj)[1]
        self.classes[name] = DeviceClass(
            name, cel_expressions(spec.get("selectors")), spec.get("extendedResourceName")
        )

    def extended_resources(self) -> frozenset[str]:
        """The extended resources DeviceClasses serve (`extendedResourceName`)."""
        return frozenset(c.extended_resource for c in self.classes.values() if c.extended_resource)

    def delete_class(self, name: str) -> None:
        self.classes.pop(name, None)

    def upsert_template(self, obj: Json) -> None:
        self.templates[key_of(obj)] = obj

    def delete_template(self, key: ObjectKey) -> None:
        self.templates.pop(key, None)

    def kind_of_class(
        self, class_selectors: tuple[str, ...], own: tuple[str, ...], selectors: Selectors
    ) -> Kind | None:
        """GPU or NIC: the kind of the published devices a request's DeviceClass's selectors
        match, judged on sample devices of each kind, and where they match several kinds (a
        class taking a driver's plain netdevs as well as its RDMA NICs) the kind its own
        selectors narrow it to; None when they match devices of neither kind, or still of more
        than one (the allocator may give either)."""
        kinds = self._kinds_matching(class_selectors, selectors)
        if len(kinds) > 1 and own:
            kinds = self._kinds_matching(class_selectors + own, selectors)
        return kinds.pop() if len(kinds) == 1 else None

    def _kinds_matching(
        self, expressions: tuple[str, ...], selectors: Selectors
    ) -> set[Kind | None]:
        return {
            kind
            for (_, kind), devices in self._samples.items()
            if any(selectors.matches(expressions, d) for d in devices)
        }

    # Views

    def node(self, name: str) -> NodeDevices | None:
        return self._nodes.get(name)

    def nodes(self) -> Iterable[str]:
        return self._nodes.keys()

    def _rebuild(self, names: set[str]) -> set[str]:
        for name in names:
            self._nodes.pop(name, None)
        pools: dict[str, list[PoolKey]] = {}
        for pool, node in self._pool_node.items():
            if node in names:
                pools.setdefault(node, []).append(pool)
        for node, keys in pools.items():
            self._nodes[node] = self._node_devices(keys)
        return names

    def _node_devices(self, keys: list[PoolKey]) -> NodeDevices:
        published: list[tuple[Device, Kind | None]] = []
        notes: list[str] = []
        for key in sorted(keys):
            state = pool_state(key, [self._slices[s] for s in self._pools[key]])
            if state.incomplete:
                notes.append(state.incomplete)
            published += [(device, kind_of(device, self._rules)) for device in state.devices]
        for device, kind in published:
            if (device.driver, kind) not in self._samples:
                self._samples[device.driver, kind] = tuple(
                    d for d, k in published if k == kind and d.driver == device.driver
                )
        devices = [(d, k) for d, k in published if k is not None]
        held = frozenset(d.id for d, _ in devices if d.id in self._holders)
        return NodeDevices(tuple(devices), held, tuple(notes))
