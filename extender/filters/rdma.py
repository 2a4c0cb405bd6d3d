"""RDMA availability: free RDMA units and GPUs, and enough usable ports of the right kind."""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.filters.verdict import PASS, Verdict, fail, never
from extender.pairing import Rails
from extender.podview import PodView


def check(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    if pod.problems:
        return never("; ".join(pod.problems))
    for resource, wanted in [(pod.gpu_resource, pod.gpus), *sorted(pod.rdma.items())]:
        verdict = _capacity(node, resource, wanted)
        if not verdict.ok:
            return verdict
    if not pod.needs_rdma:
        return PASS
    if rails is None:
        return never(f"no RDMA topology: {node.topology_error}")
    return _ports(pod, rails)


def _capacity(node: NodeInfo, resource: str, wanted: int) -> Verdict:
    if wanted <= 0:
        return PASS
    total, free = node.allocatable.get(resource, 0), node.free(resource)
    if total < wanted:
        why = f" ({held}, not counted)" if (held := node.withheld.get(resource)) else ""
        return never(f"{resource}: node has {total}, pod needs {wanted}{why}")
    if free < wanted:
        return fail(f"{resource}: {free} of {total} free, pod needs {wanted}")
    return PASS


def _ports(pod: PodView, rails: Rails) -> Verdict:
    kind = f"{pod.link_layer} " if pod.link_layer else ""
    if rails.ports < pod.rails:
        return never(f"node has {rails.ports} {kind}RDMA ports, pod needs {pod.rails} rails")
    if rails.usable < pod.rails:
        down = f"rails down: {', '.join(rails.down)}; " if rails.down else ""
        rate = f" at {pod.min_rate:g} Gb/s or faster" if pod.min_rate else ""
        return never(
            f"{down}{rails.usable} of {rails.ports} {kind}ports usable{rate}, pod needs {pod.rails}"
        )
    return PASS
