"""`kube-rdma diagnose POD`: what kube-rdma did for one pod, what its node offers, and what NCCL
made of it, in one answer.

It reads the pod, the record the webhook left (`kube-rdma.io/applied`), the NCCL settings the
resolver init container printed (its log, when the profile resolves them inside the pod), the
node's topology document, health and acceptance, the best GPU-NIC pairing the extender computes
for the pod on that node, and the pod's log when it has NCCL lines.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError

from extender.pairing import profile, rails
from extender.podview import pod_view
from fabric import diagnose, nccl_log
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Topology, decode
from kube_rdma.kube.client import call, stream
from kube_rdma.kube.errors import ApiError
from webhook.ncclconf import RESOLVER


async def pod_answer(api: Any, namespace: str, name: str) -> Json:
    """The whole answer; raises NotFound when the pod does not exist."""
    pod = await call(f"read Pod {namespace}/{name}", api.read_namespaced_pod, name, namespace)
    annotations = pod["metadata"].get("annotations") or {}
    answer: Json = {
        "pod": f"{namespace}/{name}",
        "applied": _json(annotations.get(keys.APPLIED)),
        "debug": annotations.get(keys.DEBUG) == "true",
        "nccl_conf": await _resolver_output(api, pod),
        "node": None,
        "log": None,
    }
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        node = await call(f"read Node {node_name}", api.read_node, node_name)
        answer["node"] = node_answer(node, pod)
    text = await _log(api, namespace, name, None)
    report = nccl_log.analyze(text or "")
    answer["log"] = diagnose.log_answer(report) if report.seen else None
    return answer


def node_answer(node: Json, pod: Json) -> Json:
    meta = node["metadata"]
    labels = meta.get("labels") or {}
    topology = _topology((meta.get("annotations") or {}).get(keys.TOPOLOGY))
    answer: Json = {
        "name": meta["name"],
        "rdma_ready": labels.get(keys.RDMA_READY),
        "acceptance": labels.get(keys.ACCEPTANCE),
        "acceptance_time": (meta.get("annotations") or {}).get(keys.ACCEPTANCE_TIME),
        "topology": topology is not None,
    }
    if topology is None:
        return answer
    view = pod_view(pod)
    found = rails(topology, view.link_layer, view.min_rate)
    answer["ports"] = [
        f"{nic.name}:{p.port} {p.link_layer} {p.state} "
        f"{'healthy' if p.healthy else 'unhealthy'} {p.rate_gbps or '?'} Gb/s"
        for nic in topology.nics
        for p in nic.ports
    ]
    answer["gdr"] = topology.gdr.available if topology.gdr else None
    answer["pairing"] = profile(found, view.gpus)
    answer["usable_rails"] = found.usable
    return answer


NODE_GDR = {
    True: "available",
    False: "not available (no nvidia_peermem or dma-buf on the node)",
    None: "unknown (the node's topology document does not say)",
}


def text(answer: Json) -> str:
    lines = [f"pod {answer['pod']}"]
    applied = answer["applied"]
    lines.append(
        f"applied: {orjson.dumps(applied).decode() if applied else 'nothing (not opted in?)'}"
    )
    if answer["nccl_conf"]:
        lines += ["nccl-conf:", *(f"  {line}" for line in answer["nccl_conf"].splitlines())]
    node = answer["node"]
    if node is None:
        lines.append("node: not scheduled yet")
    else:
        lines.append(
            f"node {node['name']}: rdma-ready {node['rdma_ready']}, acceptance "
            f"{node['acceptance'] or 'never run'}"
        )
        lines += [f"  {port}" for port in node.get("ports", [])]
        if "pairing" in node:
            pairs = ", ".join(f"{n} GPUs at {lvl}" for lvl, n in node["pairing"].items())
            gdr = NODE_GDR[node["gdr"]]
            lines.append(f"  pairing: {pairs or 'no GPU gets a NIC'}; GPUDirect RDMA {gdr}")
    if answer["log"] is None:
        lines.append(f"log: no NCCL lines ({diagnose.NO_LINES})")
    else:
        lines.append("log:")
        lines += [f"  {line}" for line in diagnose.text(answer["log"]).splitlines()]
    return "\n".join(lines) + "\n"


async def _resolver_output(api: Any, pod: Json) -> str | None:
    inits = (pod.get("spec") or {}).get("initContainers") or []
    if not any(c.get("name") == RESOLVER for c in inits):
        return None
    meta = pod["metadata"]
    return await _log(api, meta.get("namespace") or "default", meta["name"], RESOLVER)


async def _log(api: Any, namespace: str, name: str, container: str | None) -> str | None:
    extra: dict[str, Any] = {"container": container} if container else {}
    try:
        async with stream(
            f"read log of Pod {namespace}/{name}",
            api.read_namespaced_pod_log,
            name,
            namespace,
            **extra,
        ) as response:
            return (await response.read()).decode(errors="replace")
    except ApiError:
        return None


def _json(value: str | None) -> Json | None:
    if value is None:
        return None
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {"unreadable": value}
    return parsed if isinstance(parsed, dict) else {"unreadable": value}


def _topology(value: str | None) -> Topology | None:
    if value is None:
        return None
    try:
        return decode(value)
    except (ValidationError, ValueError):
        return None
