"""The DRA objects of a cluster, indexed for the questions the extender and the simulator ask:
which GPUs and NICs each node publishes, which are held by allocated claims, and what a
DeviceClass or claim template says.

Every update returns the nodes whose devices or allocations it changed, so that the caller
rebuilds only their views. A claim counts its devices once however many pods share it, and an
`adminAccess` result holds nothing (ResourceClaim status: admin access "does not count
against" the device, k8s.io/api resource/v1 DeviceRequestAllocationResult.AdminAccess).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kube_rdma.core.dra.capacity import Amounts, add, shared_results
from kube_rdma.core.dra.counters import Counters, overdrawn
from kube_rdma.core.dra.gates import SERVED, Gates
from kube_rdma.core.dra.kinds import DEFAULT_KIND_RULES, Kind, KindRule, kind_of
from kube_rdma.core.dra.pools import PoolKey, SliceEntry, pool_state, read_slice
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import (
    Device,
    DeviceId,
    allocated_devices,
    cel_expressions,
    selectors_problem,
)
from kube_rdma.core.dra.taints import BLOCKING, TaintRule, read_rule
from kube_rdma.core.objects import Json

ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True)
class NodeDevices:
    """One node's published GPUs and NICs (complete and valid pools only), every device it
    publishes, and what claims hold."""

    devices: tuple[tuple[Device, Kind], ...]
    held: frozenset[DeviceId]
    notes: tuple[str, ...] = ()
    """Pools and slices that do not count, and why."""
    published: tuple[tuple[Device, Kind | None], ...] = ()
    """Every device of the node's pools in pool order, GPU, RDMA NIC or neither (None): what
    the allocator chooses from."""
    incomplete: frozenset[PoolKey] = frozenset()
    invalid: tuple[tuple[PoolKey, str], ...] = ()
    """Invalid pools, each with why."""
    counter_sets: tuple[tuple[PoolKey, tuple[tuple[str, Counters], ...]], ...] = ()
    """By pool, its counter sets (name, counters) (kube_rdma/core/dra/counters.py)."""
    consumed: Mapping[DeviceId, Amounts] = field(default_factory=dict)
    """What allocated claims sharing a device (`shareID`) consume of its capacities."""

    def count(self, kind: Kind) -> int:
        return sum(1 for _, k in self.devices if k == kind)

    def in_use(self, kind: Kind) -> int:
        return sum(1 for d, k in self.devices if k == kind and d.id in self.held)

    def free(self) -> list[Device]:
        """The devices of the node's pools that no claim holds, of any kind (a DeviceClass's
        selectors say which serve it)."""
        return [d for d, _ in self.published if d.id not in self.held]


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    extended_resource: str | None = None
    problem: str = ""
    """What validation refuses in it (a selector with no CEL expression), or empty."""


def key_of(obj: Json) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class DraIndex:
    def __init__(
        self, rules: Sequence[KindRule] = DEFAULT_KIND_RULES, gates: Gates = SERVED
    ) -> None:
        """`gates`: which DRA features the reading follows (kube_rdma/core/dra/gates.py): with
        DRAPartitionableDevices off, slices of counter sets only are left out, as
        kube-scheduler's GatherPools leaves them out; with DeviceTaintRules off, no rule
        taints a device."""
        self._rules = tuple(rules)
        self._gates = gates
        self.taint_rules: dict[str, TaintRule | str] = {}
        """DeviceTaintRules by name, each read or why it taints nothing."""
        self._slices: dict[str, SliceEntry] = {}
        self._pools: dict[PoolKey, set[str]] = {}
        self._pool_node: dict[PoolKey, str] = {}
        self.claims: dict[ObjectKey, Json] = {}
        self._claim_devices: dict[ObjectKey, frozenset[DeviceId]] = {}
        self._holders: dict[DeviceId, set[ObjectKey]] = {}
        self._shares: dict[DeviceId, dict[ObjectKey, list[Amounts]]] = {}
        """Per shared device, what each claim's results consume of it."""
        self.classes: dict[str, DeviceClass] = {}
        self.templates: dict[ObjectKey, Json] = {}
        self._nodes: dict[str, NodeDevices] = {}
        self._samples: dict[tuple[str, Kind | None], dict[tuple[object, ...], Device]] = {}
        """(driver, kind) -> a device of each shape of that kind (None: neither a GPU nor an
        RDMA NIC, a MIG slice or a plain netdev) any node has published."""

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
        shares = shared_results(obj)
        shared = {d for d, _ in shares}
        held = frozenset(d for d, admin in allocated_devices(obj) if not admin and d not in shared)
        self._claim_devices[key] = held | shared
        for device in held:
            self._holders.setdefault(device, set()).add(key)
        for device, amounts in shares:
            self._shares.setdefault(device, {}).setdefault(key, []).append(amounts)
        return self._rebuild(touched | self._nodes_of(held | shared))

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
            shares = self._shares.get(device)
            if shares is not None:
                shares.pop(key, None)
                if not shares:
                    del self._shares[device]
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
            name,
            cel_expressions(spec.get("selectors")),
            spec.get("extendedResourceName"),
            selectors_problem(spec.get("selectors")),
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
        match, judged on a device of each shape any node publishes (kube-rdma counts the
        pod's devices by it; the allocation itself is judged on each node's devices), and
        where they match several kinds (a class taking a driver's plain netdevs as well as
        its RDMA NICs) the kind its own selectors narrow it to; None when they match devices
        of neither kind, or still of more than one (the allocator may give either)."""
        kinds = self._kinds_matching(class_selectors, selectors)
        if len(kinds) > 1 and own:
            kinds = self._kinds_matching(class_selectors + own, selectors)
        return kinds.pop() if len(kinds) == 1 else None

    def _kinds_matching(
        self, expressions: tuple[str, ...], selectors: Selectors
    ) -> set[Kind | None]:
        return {
            kind
            for (_, kind), shapes in self._samples.items()
            if any(selectors.matches(expressions, d) for d in shapes.values())
        }

    # DeviceTaintRules

    def upsert_taint_rule(self, obj: Json) -> set[str]:
        self.taint_rules[key_of(obj)[1]] = read_rule(obj)
        return self._rebuild(set(self._nodes) | set(self._pool_node.values()))

    def delete_taint_rule(self, name: str) -> set[str]:
        self.taint_rules.pop(name, None)
        return self._rebuild(set(self._nodes) | set(self._pool_node.values()))

    def replace_taint_rules(self, items: Iterable[Json]) -> set[str]:
        self.taint_rules = {key_of(obj)[1]: read_rule(obj) for obj in items}
        return self._rebuild(set(self._nodes) | set(self._pool_node.values()))

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
        incomplete: set[PoolKey] = set()
        invalid: list[tuple[PoolKey, str]] = []
        counter_sets: list[tuple[PoolKey, tuple[tuple[str, Counters], ...]]] = []
        partitionable = self._gates.partitionable_devices
        for key in sorted(keys):
            entries, names = [], []
            for name in sorted(self._pools[key]):
                entry = self._slices[name]
                if entry.problem:
                    notes.append(f"ResourceSlice {name} is refused: {entry.problem}")
                else:
                    entries.append(entry)
                    names.append(name)
            if not entries:
                continue
            state = pool_state(key, entries, names, partitionable)
            if state.incomplete:
                notes.append(state.incomplete)
                incomplete.add(key)
            if state.invalid:
                notes.append(state.invalid)
                invalid.append((key, state.invalid))
            sets = tuple((s.name, s.counters) for s in state.counter_sets)
            if sets:
                counter_sets.append((key, sets))
            for device in self._tainted(state.devices):
                published.append((device, kind_of(device, self._rules)))
                notes += _device_notes(device, dict(sets))
        for device, kind in published:
            self._remember_shape(device, kind)
        held = frozenset(d.id for d, _ in published if d.id in self._holders)
        consumed = {d.id: self._consumed(d.id) for d, _ in published if d.id in self._shares}
        broken = incomplete | {k for k, _ in invalid}
        devices = tuple(
            (d, k)
            for d, k in published
            if k is not None and (d.driver, d.pool) not in broken and not self._kept_off(d)
        )
        return NodeDevices(
            devices,
            held,
            tuple(notes),
            tuple(published),
            frozenset(incomplete),
            tuple(invalid),
            tuple(counter_sets),
            consumed,
        )

    def _consumed(self, device: DeviceId) -> Amounts:
        total: Amounts = {}
        for amounts in self._shares[device].values():
            for one in amounts:
                total = add(total, one)
        return total

    def _tainted(self, devices: Iterable[Device]) -> Iterable[Device]:
        """The devices with the taints of the DeviceTaintRules that select them added."""
        rules = [r for r in self.taint_rules.values() if isinstance(r, TaintRule)]
        if not self._gates.device_taint_rules or not rules:
            yield from devices
            return
        for device in devices:
            extra = tuple(r.taint for r in rules if r.selects(*device.id))
            yield replace(device, taints=device.taints + extra) if extra else device

    def _kept_off(self, device: Device) -> bool:
        """Whether a taint no request tolerates by default keeps the device out of the counts
        of GPUs and NICs (NoSchedule, NoExecute), or it consumes counters with partitionable
        devices off."""
        if device.consumes and not self._gates.partitionable_devices:
            return True
        return self._gates.device_taints and any(t.effect in BLOCKING for t in device.taints)

    def _remember_shape(self, device: Device, kind: Kind | None) -> None:
        """Keeps one device of each shape (driver, kind, and attributes and capacities but
        those that tell devices apart) the cluster publishes, from every node: what a class's
        kind is judged on."""
        shapes = self._samples.setdefault((device.driver, kind), {})
        if len(shapes) < _SHAPES_PER_KIND:
            shapes.setdefault(_shape(device), device)


def _device_notes(device: Device, sets: dict[str, Counters]) -> list[str]:
    """What keeps a device from being allocated that the node's notes say: its blocking
    taints, a counter it consumes more of than its set has."""
    notes = []
    where = f"device {device.name} of pool {device.pool} of {device.driver}"
    blocking = [t.describe() for t in device.taints if t.effect in BLOCKING]
    if blocking:
        notes.append(f"{where} is tainted {', '.join(blocking)}")
    if (over := overdrawn(sets, device.consumes)) is not None:
        notes.append(f"{where} can never be allocated: consumesCounters {over}")
    return notes


_SHAPES_PER_KIND = 1024
"""Bounds the memory: a cluster with more distinct shapes of one driver and kind has its
kinds judged on the first 1,024 seen."""
_IDENTITY = frozenset(
    {"uuid", "pcieBusID", "pciBusID", "pciAddress", "mac", "ipv4", "ipv6", "pfPciAddress"}
)


def _telling(name: str) -> bool:
    return name.rpartition("/")[2] not in _IDENTITY


def _shape(device: Device) -> tuple[object, ...]:
    return (
        tuple(sorted((n, v) for n, v in device.attributes.items() if _telling(n))),
        tuple(sorted(device.capacity.items())),
    )
