"""`kube-rdma snapshot`: a live cluster's Nodes, running pods, PodGroups, the workloads that
own pods and the DRA objects (ResourceSlices, ResourceClaims, DeviceClasses and
ResourceClaimTemplates, at the newest resource.k8s.io version served), written as one
`kind: List` file that `kube-rdma simulate` and `kube-rdma extender --cluster-snapshot` read.

Each object keeps what those readers use: a Node its labels, kube-rdma's annotations (the
topology document), taints and allocatable; a pod what the extender keeps of it
(extender/cluster/trim.py); a workload its spec. PodGroups and workloads of an API the cluster
does not serve are skipped. `--anonymize` renames and rewrites them (kubesim/simulate/
anonymize.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes_asyncio import client

from extender.cluster import dra_objects
from extender.cluster.owners import WORKLOADS
from extender.cluster.trim import trim_pod, trim_workload
from kube_rdma.core import keys
from kube_rdma.core.frameworks import coscheduling, volcano
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import NotFound
from kubesim.simulate.anonymize import anonymize

TIMEOUT = 60.0
PODGROUPS = (
    (coscheduling.GROUP, coscheduling.PODGROUP_VERSION, "PodGroup"),
    (volcano.SCHEDULING_GROUP, volcano.PODGROUP_VERSION, "PodGroup"),
)


async def take_snapshot(out: Path, anonymized: bool) -> int:
    """Write the snapshot to `out` (JSON for .json, else YAML); the number of objects. The
    caller has configured the client (kube_rdma/kube/kubeconfig.py)."""
    async with client.ApiClient() as api:
        objects = await collect(client.CoreV1Api(api), client.CustomObjectsApi(api))
    if anonymized:
        objects = anonymize(objects)
    write(objects, out)
    return len(objects)


async def collect(core: Any, custom: Any) -> list[Json]:
    nodes = await call("list nodes", core.list_node, request_timeout=TIMEOUT)
    pods = await call(
        "list pods",
        core.list_pod_for_all_namespaces,
        field_selector="status.phase!=Succeeded,status.phase!=Failed",
        request_timeout=TIMEOUT,
    )
    found = [node(n) for n in nodes.get("items") or []]
    found += [
        trim_pod({"apiVersion": "v1", "kind": "Pod", **p})
        for p in pods.get("items") or []
        if (p.get("spec") or {}).get("nodeName")
    ]
    for group, version, kind in PODGROUPS:
        found += await _custom(custom, group, version, "podgroups", kind)
    for resource in WORKLOADS:
        items = await _custom(
            custom, resource.group, resource.version, resource.plural, resource.kind
        )
        found += [trim_workload(o) for o in items]
    for kind, plural in dra_objects.PLURALS.items():
        found += await _dra(custom, plural, kind)
    return found


async def _dra(custom: Any, plural: str, kind: str) -> list[Json]:
    """The objects of one DRA resource at the newest version served, without managedFields."""
    for version in dra_objects.VERSIONS:
        try:
            body = await call(
                f"list {plural}.{dra_objects.GROUP}/{version}",
                custom.list_cluster_custom_object,
                dra_objects.GROUP,
                version,
                plural,
                request_timeout=TIMEOUT,
            )
        except NotFound:
            continue
        api_version = f"{dra_objects.GROUP}/{version}"
        return [
            {
                **o,
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {
                    k: v for k, v in (o.get("metadata") or {}).items() if k != "managedFields"
                },
            }
            for o in body.get("items") or []
        ]
    return []


def node(obj: Json) -> Json:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(keys.PREFIX)
    }
    kept_spec = {k: spec[k] for k in ("taints", "unschedulable") if k in spec}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    kept_status: Json = {"allocatable": status.get("allocatable") or {}}
    if ready:
        kept_status["conditions"] = [{"type": "Ready", "status": ready[0].get("status")}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": meta.get("name"),
            "labels": meta.get("labels") or {},
            "annotations": annotations,
        },
        "spec": kept_spec,
        "status": kept_status,
    }


async def _custom(custom: Any, group: str, version: str, plural: str, kind: str) -> list[Json]:
    try:
        found = await call(
            f"list {plural}.{group}",
            custom.list_cluster_custom_object,
            group,
            version,
            plural,
            request_timeout=TIMEOUT,
        )
    except NotFound:
        return []  # the cluster does not serve this API
    return [
        {"apiVersion": f"{group}/{version}", "kind": kind, **o} for o in found.get("items") or []
    ]


def write(objects: list[Json], out: Path) -> None:
    document = {"apiVersion": "v1", "kind": "List", "items": objects}
    if out.suffix.lower() == ".json":
        out.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    else:
        out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
