"""The live source's cache compared with the fake apiserver's objects, object by object: every
Node and non-terminal Pod as trimmed, every workload owner and PodGroup, and nothing the server
no longer holds. `differences` lists what does not match, so that a failing test says what."""

from __future__ import annotations

from collections.abc import Mapping

from extender.cluster.live import PODGROUP_VERSIONS, LiveSource
from extender.cluster.node_topology import read_topology
from extender.cluster.owners import WORKLOADS, WorkloadResource
from extender.cluster.pods import TERMINAL_PHASES, pod_key
from extender.cluster.trim import trim_node, trim_pod, trim_workload
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.fakeapi import FakeApiServer


def differences(source: LiveSource, api: FakeApiServer, gone: set[str]) -> list[str]:
    """What the cache holds that the server does not, and the other way round; `gone` names
    (as "kind namespace/name") objects deleted on the server, which must be gone from the cache
    too: Owners and PodGroups cannot be enumerated."""
    return [
        *_nodes(source, api),
        *_pods(source, api),
        *_owners(source, api, gone),
        *_podgroups(source, api, gone),
    ]


def _nodes(source: LiveSource, api: FakeApiServer) -> list[str]:
    """The cache keeps a Node less its topology document, which its view holds decoded."""
    truth = {o["metadata"]["name"]: _without_topology(trim_node(o)) for o in api.objects("nodes")}
    cached = {n.name: source.cluster.node_object(n.name) for n in source.cluster.nodes()}
    found = _compare("node", truth, cached)
    for obj in api.objects("nodes"):
        name = obj["metadata"]["name"]
        view = source.cluster.node(name)
        document = (obj["metadata"].get("annotations") or {}).get(keys.TOPOLOGY)
        if view is not None and view.topology != read_topology(name, document)[0]:
            found.append(f"node {name}: cached topology {view.topology}")
    return found


def _without_topology(node: Json) -> Json:
    meta = dict(node["metadata"])
    annotations = {k: v for k, v in (meta.pop("annotations", None) or {}).items()}
    annotations.pop(keys.TOPOLOGY, None)
    if annotations:
        meta["annotations"] = annotations
    return {**node, "metadata": meta}


def _pods(source: LiveSource, api: FakeApiServer) -> list[str]:
    truth = {
        "/".join(pod_key(o)): trim_pod(o)
        for o in api.objects("pods")
        if (o.get("status") or {}).get("phase") not in TERMINAL_PHASES
    }
    cached = {"/".join(pod_key(o)): o for o in source.cluster.pods()}
    return _compare("pod", truth, cached)


def _owners(source: LiveSource, api: FakeApiServer, gone: set[str]) -> list[str]:
    found: list[str] = []
    for resource in WORKLOADS:
        key = _served_key(api, resource)
        objects = api.objects(key) if key is not None else []
        for obj in objects:
            namespace, name = pod_key(obj)
            cached = source.owners.find(resource, namespace, name)
            if cached != trim_workload(obj):
                found.append(f"{resource} {namespace}/{name}: cached {cached}")
        for entry in gone:
            kind, _, qualified = entry.partition(" ")
            namespace, _, name = qualified.partition("/")
            if kind == str(resource) and source.owners.find(resource, namespace, name):
                found.append(f"{entry}: deleted, still cached")
    return found


def _podgroups(source: LiveSource, api: FakeApiServer, gone: set[str]) -> list[str]:
    found: list[str] = []
    for group, _ in PODGROUP_VERSIONS:
        key = f"podgroups.{group}"
        for obj in api.objects(key) if key in api.resources else []:
            namespace, name = pod_key(obj)
            size = source.cluster.podgroup_size(group, namespace, name)
            if size != obj["spec"]["minMember"]:
                found.append(f"{key} {namespace}/{name}: cached size {size}")
        for entry in gone:
            kind, _, qualified = entry.partition(" ")
            namespace, _, name = qualified.partition("/")
            if kind == key and source.cluster.podgroup_size(group, namespace, name) is not None:
                found.append(f"{entry}: deleted, still cached")
    return found


def _served_key(api: FakeApiServer, resource: WorkloadResource) -> str | None:
    for key, served in api.resources.items():
        plural = served.plural or key
        if served.api_version == resource.api_version and plural == resource.plural:
            return key
    return None


def _compare(kind: str, truth: Mapping[str, Json], cached: Mapping[str, Json | None]) -> list[str]:
    names = sorted(set(truth) | set(cached))
    return [
        f"{kind} {name}: server {truth.get(name)}, cached {cached.get(name)}"
        for name in names
        if truth.get(name) != cached.get(name)
    ]
