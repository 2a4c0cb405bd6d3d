"""Gang plans as records in the API, so that no plan lives only in one extender's memory.

An extender that restarts, or the standby that takes over from a leader that died, must finish
the gangs in flight without double-booking their nodes or binding a gang partly: it needs each
plan (the node of every member slot, the domain) and which members are bound. Members bound
are in the pods themselves (spec.nodeName); the plan is written here once per plan made, one
ConfigMap per gang in the extender's namespace, labelled `kube-rdma.io/gang-plan`, and removed
when the gang is bound whole or the plan is dropped. What decides which member may take which
slot is written with it: a sliced plan's slice size (slice k's ranks take slice k's slots), and
for each slot the node constraints of the member group it was planned for (node selector,
required node affinity, tolerations; kept as those pod spec fields, compiled again when read).
Which member took which slot is not: members bound take a slot of their node, the others the
free slots meant for them, as they are filtered. A record written before slices and groups
were recorded has neither, and resumes as such records always did: any member, any free slot.
Arrivals at the bind barrier are not written either: kube-scheduler retries every member whose
bind failed, and the retried binds arrive again.

Each record names the extender process that wrote it (`holder`). A record written by another
process tells an extender that someone else acted since (a takeover, or a restart of its own):
before it answers again it adopts the records as they stand (extender/scheduling.py).

`PlanRecords` is what the planner writes to and the scheduler reads; `MemoryRecords` keeps them
in memory only (a cluster snapshot, unit tests); extender/book/configmaps.py keeps them in
ConfigMaps.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import orjson

from extender.book.reservations import GangKey
from kube_rdma.core import keys
from kube_rdma.core.objects import Json

NAME_LIMIT = 253


@dataclass(frozen=True)
class PlanRecord:
    gang: GangKey
    size: int
    domain: str
    slots: tuple[str, ...]
    """The node of each member slot (a node once per member it takes)."""
    holder: str = ""
    """The extender process that wrote the record."""
    hold: Json | None = None
    """Set when the record holds nodes for a gang without a plan (extender/book/holds.py):
    its priority, GPUs and the units being evicted for it; the slots are then the held nodes."""
    slice_size: int = 0
    """Slots per slice of a sliced plan; 0: not sliced."""
    groups: tuple[Json, ...] = ()
    """Each member group's node constraints, as the pod spec fields they are read from
    (`constraint_spec`)."""
    slot_groups: tuple[int | None, ...] = ()
    """Per slot, the index in `groups` of the group it was planned for; None: any member.
    Empty when `groups` is."""


def constraint_spec(pod: Json) -> Json:
    """The fields of a pod's spec its node constraints are compiled from
    (kube_rdma.core.nodeconstraints.NodeConstraints.of), as the pod has them."""
    spec = pod.get("spec") or {}
    kept: Json = {k: spec[k] for k in ("nodeSelector", "tolerations") if k in spec}
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    if REQUIRED in node_affinity:
        kept["affinity"] = {"nodeAffinity": {REQUIRED: node_affinity[REQUIRED]}}
    return kept


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def record_name(gang: GangKey) -> str:
    """The ConfigMap's name: a DNS-1123 subdomain whatever the gang is called, readable, and made
    unique by a hash of the original namespace/name (the readable part alone is the same for
    a/b-c and a-b/c, and for Train_Job and train-job).

    A gang name is any annotation or label value: `Train_Job`, 300 characters, unicode. The
    readable part keeps what a DNS-1123 subdomain allows (lowercase letters, digits, `-`, `.`
    between alphanumerics) and turns the rest into `-`; a name that is already valid keeps the
    name earlier versions gave it. The record's data keeps the gang's own name."""
    namespace, name = gang
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:10]
    readable = _subdomain_part(f"gang-{namespace}-{name}")
    readable = readable[: NAME_LIMIT - len(digest) - 1].rstrip(".-")
    return f"{readable}-{digest}"


_NOT_ALLOWED = re.compile(r"[^a-z0-9.-]")
_DOT_RUN = re.compile(r"[.-]*\.[.-]*")
"""A dot with dashes or dots next to it: each dot-separated label must start and end with an
alphanumeric, so the run becomes one dot."""


def _subdomain_part(text: str) -> str:
    text = _NOT_ALLOWED.sub("-", text.lower())
    return _DOT_RUN.sub(".", text)


def encode(record: PlanRecord, namespace: str) -> Json:
    """The ConfigMap that holds `record`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": record_name(record.gang),
            "namespace": namespace,
            "labels": {
                keys.GANG_PLAN: "true",
                **({keys.GANG_HOLD: "true"} if record.hold is not None else {}),
            },
        },
        "data": {
            "namespace": record.gang[0],
            "gang": record.gang[1],
            "size": str(record.size),
            "domain": record.domain,
            "slots": orjson.dumps(list(record.slots)).decode(),
            "holder": record.holder,
            **({"hold": orjson.dumps(record.hold).decode()} if record.hold is not None else {}),
            **({"sliceSize": str(record.slice_size)} if record.slice_size else {}),
            **_encoded_groups(record),
        },
    }


def _encoded_groups(record: PlanRecord) -> dict[str, str]:
    if not record.groups:
        return {}
    return {
        "groups": orjson.dumps(list(record.groups)).decode(),
        "slotGroups": orjson.dumps(list(record.slot_groups)).decode(),
    }


def decode(configmap: Json) -> PlanRecord | None:
    """The record a ConfigMap holds; None when it holds none (edited by hand, say)."""
    data = configmap.get("data") or {}
    try:
        slots = orjson.loads(data["slots"])
        hold = orjson.loads(data["hold"]) if "hold" in data else None
        record = PlanRecord(
            (str(data["namespace"]), str(data["gang"])),
            int(data["size"]),
            str(data["domain"]),
            tuple(str(s) for s in slots),
            str(data.get("holder") or ""),
            hold if isinstance(hold, dict) else None,
            _slice_size(data),
            *_decoded_groups(data, len(slots)),
        )
    except (KeyError, ValueError, TypeError):
        return None
    return record


def _slice_size(data: Mapping[str, str]) -> int:
    size = int(data.get("sliceSize") or 0)
    if size < 0:
        raise ValueError(f"sliceSize is negative: {size}")
    return size


def _decoded_groups(
    data: Mapping[str, str], slots: int
) -> tuple[tuple[Json, ...], tuple[int | None, ...]]:
    """The groups and each slot's group; ValueError when they do not fit together."""
    if "groups" not in data:
        return (), ()
    groups = orjson.loads(data["groups"])
    slot_groups = orjson.loads(data["slotGroups"])
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise ValueError("groups is not a list of objects")
    if not isinstance(slot_groups, list) or len(slot_groups) != slots:
        raise ValueError("slotGroups does not give one group per slot")
    for index in slot_groups:
        if index is not None and (type(index) is not int or not 0 <= index < len(groups)):
            raise ValueError(f"slotGroups names no group: {index!r}")
    return tuple(groups), tuple(slot_groups)


class PlanRecords(Protocol):
    def ready(self) -> bool:
        """Whether the records have been read (listed) once."""
        ...

    def saved(self) -> Mapping[GangKey, PlanRecord]:
        """The records as last read."""
        ...

    @property
    def foreign_changes(self) -> int:
        """How many records written or removed by another process were seen, so far."""
        ...

    def put(self, record: PlanRecord) -> None:
        """Write the gang's record (in the background)."""
        ...

    def remove(self, gang: GangKey) -> None:
        """Remove the gang's record (in the background)."""
        ...

    async def flush(self, gang: GangKey) -> bool:
        """Wait for the gang's writes; whether its record is as last put or removed."""
        ...

    async def run(self) -> None:
        """Follow the records (until cancelled)."""
        ...


class MemoryRecords:
    """Records that live only in this process."""

    def __init__(self) -> None:
        self._saved: dict[GangKey, PlanRecord] = {}

    def ready(self) -> bool:
        return True

    def saved(self) -> Mapping[GangKey, PlanRecord]:
        return self._saved

    @property
    def foreign_changes(self) -> int:
        return 0

    def put(self, record: PlanRecord) -> None:
        self._saved[record.gang] = record

    def remove(self, gang: GangKey) -> None:
        self._saved.pop(gang, None)

    async def flush(self, gang: GangKey) -> bool:
        return True

    async def run(self) -> None:
        await asyncio.Event().wait()
