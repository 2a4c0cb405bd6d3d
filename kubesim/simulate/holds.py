"""How long gangs were held: read from the hold records the extender keeps in ConfigMaps.

The extender records each hold as a ConfigMap labelled `kube-rdma.io/gang-hold` in its own
namespace, data key "gang" = "<namespace>/<name>"; a hold lasts from that ConfigMap's creation
to its deletion. Reading the records, not the extender's memory, measures what an admin would
see on a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler import GangKey

CONFIGMAPS = "configmaps"


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
        if old is None and new is not None:
            found = _hold(new)
            if found is not None:
                self._open[_key(new)] = (found, self._now())
        elif new is None and old is not None:
            spell = self._open.pop(_key(old), None)
            if spell is not None:
                gang, since = spell
                self._held[gang] = self._held.get(gang, 0.0) + self._now() - since

    def held_seconds(self) -> dict[GangKey, float]:
        held = dict(self._held)
        now = self._now()
        for gang, since in self._open.values():
            held[gang] = held.get(gang, 0.0) + now - since
        return held


def _hold(configmap: Json) -> GangKey | None:
    meta = configmap.get("metadata") or {}
    if keys.GANG_HOLD not in (meta.get("labels") or {}):
        return None
    namespace, sep, name = str((configmap.get("data") or {}).get("gang") or "").partition("/")
    return (namespace, name) if sep and namespace and name else None


def _key(obj: Json) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))
