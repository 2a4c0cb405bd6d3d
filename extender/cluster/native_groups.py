"""Kubernetes' own gang objects (`scheduling.k8s.io` Workloads and PodGroups) in the cluster
model, read by kube_rdma/core/frameworks/kubernetes_scheduling.py.

Every served version is followed (extender/cluster/live.py); an object of a version that module
does not know is read as absent, and the first of each such version is logged once as a
warning, since kube-scheduler may hold its pods as a gang that the extender cannot see.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kube_rdma.core.frameworks import kubernetes_scheduling as native
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupClaim, GroupRef, NativeGroup
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")

Key = tuple[str, str]


class NativeGroups:
    """PodGroups and Workloads by namespace and name, with the version each was read in."""

    def __init__(self) -> None:
        self._podgroups: dict[Key, NativeGroup] = {}
        self._workloads: dict[Key, tuple[str, dict[str, NativeGroup]]] = {}
        self._warned: set[str] = set()

    def upsert(self, obj: Json) -> None:
        kind, key = obj.get("kind"), _key(obj)
        _, version = native.version_of(obj)
        if version not in native.KNOWN_VERSIONS:
            self.warn_unknown(version)
            return
        if kind == native.WORKLOAD:
            groups = native.read_workload(obj)
            if groups is not None:
                self._workloads[key] = (version, groups)
            return
        group = native.read_podgroup(obj)
        if group is not None:
            self._podgroups[key] = group

    def delete(self, obj: Json) -> None:
        if obj.get("kind") == native.WORKLOAD:
            self._workloads.pop(_key(obj), None)
        else:
            self._podgroups.pop(_key(obj), None)

    def replace(self, kind: str, version: str, items: Iterable[Json]) -> None:
        """Every object of one kind and version, as listed."""
        if kind == native.WORKLOAD:
            for key in [k for k, v in self._workloads.items() if v[0] == version]:
                del self._workloads[key]
        else:
            for key in [k for k, g in self._podgroups.items() if g.version == version]:
                del self._podgroups[key]
        api_version = f"{native.GROUP}/{version}"
        for obj in items:
            self.upsert({**obj, "kind": kind, "apiVersion": obj.get("apiVersion") or api_version})

    def find(self, namespace: str, ref: GroupRef) -> NativeGroup | None:
        """The group a pod names; None while it does not exist (or is of a version not read)."""
        if ref.kind == native.PODGROUP:
            return self._podgroups.get((namespace, ref.name))
        found = self._workloads.get((namespace, ref.name))
        return None if found is None else found[1].get(ref.pod_group)

    def claims_of(self, pod: Json) -> tuple[GroupClaim, ...]:
        """The ResourceClaims the pod's PodGroup owns (extender/cluster/claims.py)."""
        ref = native.group_ref(pod.get("spec") or {})
        if ref is None:
            return ()
        group = self.find(str((pod.get("metadata") or {}).get("namespace") or "default"), ref)
        return () if group is None else group.claims

    def warn_unknown(self, version: str) -> None:
        """Log once per version that its objects are read as absent."""
        if version in self._warned:
            return
        self._warned.add(version)
        log.warning(
            "%s/%s is not a version kube-rdma reads (it reads %s): its Workloads and PodGroups "
            "are read as absent, and their pods as naming no group",
            native.GROUP,
            version or "(none)",
            ", ".join(sorted(native.KNOWN_VERSIONS)),
        )


def _key(obj: Json) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))
