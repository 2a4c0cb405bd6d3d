"""Kubernetes' own gang objects (`scheduling.k8s.io` Workloads, PodGroups and
CompositePodGroups) in the cluster model, read by
kube_rdma/core/frameworks/kubernetes_scheduling.py; a pod's gang is resolved through the
CompositePodGroups above its PodGroup (kube_rdma/core/frameworks/composite_pod_groups.py).

Every served version is followed (extender/cluster/live.py); an object of a version that module
does not know is read as absent, and the first of each such version is logged once as a
warning, since kube-scheduler may hold its pods as a gang that the extender cannot see.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kube_rdma.core.frameworks import kubernetes_scheduling as native
from kube_rdma.core.frameworks.composite_pod_groups import Children, gang_group
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupClaim, GroupRef, NativeGroup
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")

Key = tuple[str, str]


class NativeGroups:
    """PodGroups and Workloads by namespace and name, with the version each was read in."""

    def __init__(self) -> None:
        self._podgroups: dict[Key, NativeGroup] = {}
        self._composites: dict[Key, NativeGroup] = {}
        self._trees: dict[str, tuple[dict[str, NativeGroup], Children]] = {}
        """Per namespace, its CompositePodGroups and every group's children; dropped on change."""
        self._workloads: dict[Key, tuple[str, dict[str, NativeGroup]]] = {}
        self._warned: set[str] = set()

    def upsert(self, obj: Json) -> None:
        kind, key = obj.get("kind"), _key(obj)
        _, version = native.version_of(obj)
        self._trees.pop(key[0], None)
        if version not in native.KNOWN_VERSIONS:
            self.warn_unknown(version)
            return
        if kind == native.COMPOSITE:
            composite = native.read_composite(obj)
            if composite is None:
                self.warn_unknown(version, kind)
            else:
                self._composites[key] = composite
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
        self._trees.pop(_key(obj)[0], None)
        if obj.get("kind") == native.WORKLOAD:
            self._workloads.pop(_key(obj), None)
        elif obj.get("kind") == native.COMPOSITE:
            self._composites.pop(_key(obj), None)
        else:
            self._podgroups.pop(_key(obj), None)

    def replace(self, kind: str, version: str, items: Iterable[Json]) -> None:
        """Every object of one kind and version, as listed."""
        self._trees.clear()
        if kind == native.WORKLOAD:
            for key in [k for k, v in self._workloads.items() if v[0] == version]:
                del self._workloads[key]
        elif kind == native.COMPOSITE:
            for key in [k for k, g in self._composites.items() if g.version == version]:
                del self._composites[key]
        else:
            for key in [k for k, g in self._podgroups.items() if g.version == version]:
                del self._podgroups[key]
        api_version = f"{native.GROUP}/{version}"
        for obj in items:
            self.upsert({**obj, "kind": kind, "apiVersion": obj.get("apiVersion") or api_version})

    def find(self, namespace: str, ref: GroupRef) -> NativeGroup | None:
        """The group whose gang the pods naming `ref` are: their PodGroup, or the
        CompositePodGroup above it planned as one gang; None while the group they name does not
        exist (or is of a version not read)."""
        if ref.kind == native.PODGROUP:
            leaf = self._podgroups.get((namespace, ref.name))
            return None if leaf is None else gang_group(leaf, *self._tree(namespace))
        found = self._workloads.get((namespace, ref.name))
        return None if found is None else found[1].get(ref.pod_group)

    def claims_of(self, pod: Json) -> tuple[GroupClaim, ...]:
        """The ResourceClaims the pod's own PodGroup owns (extender/cluster/claims.py)."""
        ref = native.group_ref(pod.get("spec") or {})
        if ref is None:
            return ()
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        if ref.kind == native.PODGROUP:
            group = self._podgroups.get((namespace, ref.name))
        else:
            group = self.find(namespace, ref)
        return () if group is None else group.claims

    def _tree(self, namespace: str) -> tuple[dict[str, NativeGroup], Children]:
        if (tree := self._trees.get(namespace)) is None:
            composites = {k[1]: g for k, g in self._composites.items() if k[0] == namespace}
            children: dict[str, list[NativeGroup]] = {}
            for (ns, _), group in [*self._composites.items(), *self._podgroups.items()]:
                if ns == namespace and group.parent:
                    children.setdefault(group.parent, []).append(group)
            tree = self._trees[namespace] = (composites, children)
        return tree

    def warn_unknown(self, version: str, kind: str = "") -> None:
        """Log once per version (and kind, for a CompositePodGroup of a version whose PodGroups
        are read) that its objects are read as absent."""
        if f"{kind} {version}" in self._warned:
            return
        self._warned.add(f"{kind} {version}")
        if kind:
            log.warning(
                "%s %s/%s is not a version kube-rdma reads (it reads %s): its %ss are read as "
                "absent, and the groups naming them wait for them",
                kind,
                native.GROUP,
                version,
                ", ".join(native.COMPOSITE_VERSIONS),
                kind,
            )
            return
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
