"""How long gangs were held: read from the records the extender keeps in ConfigMaps.

The extender records a gang's plan, or its hold, in a ConfigMap of its own namespace
(extender/book/records.py); a record holding nodes for a gang carries the label
`kube-rdma.io/gang-hold` beside `kube-rdma.io/gang-plan`, and says which gang in its data
(`namespace` and `gang`, or `gang` alone as "<namespace>/<name>"). A hold lasts from when such
a ConfigMap appears (created, or its record turned into a hold) to when it goes (deleted, or
turned into a plan). Reading the records, not the extender's memory, measures what an admin
would see on a real cluster. `StoreRecords` keeps the extender's records in the simulation's
apiserver, as ConfigMapRecords keeps them in a cluster's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.book.records import MemoryRecords, PlanRecord, encode
from extender.book.reservations import GangKey
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import NotFound
from kubesim.simulate.store import MemoryApiserver

CONFIGMAPS = "configmaps"
NAMESPACE = "kube-rdma"
"""The extender's namespace in a simulation."""


class HoldRecorder:
    """A store listener for ConfigMaps: held seconds per gang, spells in progress counted up to
    `now()`."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._open: dict[tuple[str, str], tuple[GangKey, float]] = {}
        self._held: dict[GangKey, float] = {}

    def changed(self, plural: str, old: Json | None, new: Json | None) -> None:
        if plural != CONFIGMAPS:
            return
        key = _key(new if new is not None else old or {})
        gang = _hold(new) if new is not None else None
        if gang is None:
            self._close(key)
        elif key not in self._open:
            self._open[key] = (gang, self._now())

    def held_seconds(self) -> dict[GangKey, float]:
        held = dict(self._held)
        now = self._now()
        for gang, since in self._open.values():
            held[gang] = held.get(gang, 0.0) + now - since
        return held

    def _close(self, key: tuple[str, str]) -> None:
        spell = self._open.pop(key, None)
        if spell is not None:
            gang, since = spell
            self._held[gang] = self._held.get(gang, 0.0) + self._now() - since


class StoreRecords(MemoryRecords):
    """The extender's plan and hold records, each also written to `store` as the ConfigMap
    ConfigMapRecords would write."""

    def __init__(self, store: MemoryApiserver) -> None:
        super().__init__()
        self._store = store

    def put(self, record: PlanRecord) -> None:
        super().put(record)
        configmap = encode(record, NAMESPACE)
        try:
            self._store.replace_object(CONFIGMAPS, configmap)
        except NotFound:
            self._store.create_object(CONFIGMAPS, configmap)

    def remove(self, gang: GangKey) -> None:
        record = self.saved().get(gang)
        super().remove(gang)
        if record is not None:
            name = encode(record, NAMESPACE)["metadata"]["name"]
            self._store.delete_object(CONFIGMAPS, NAMESPACE, name)


def _hold(configmap: Json) -> GangKey | None:
    meta = configmap.get("metadata") or {}
    if keys.GANG_HOLD not in (meta.get("labels") or {}):
        return None
    data: Mapping[str, str] = configmap.get("data") or {}
    gang = str(data.get("gang") or "")
    if data.get("namespace"):
        return (str(data["namespace"]), gang) if gang else None
    namespace, sep, name = gang.partition("/")
    return (namespace, name) if sep and namespace and name else None


def _key(obj: Json) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))
