"""Fabric acceptance (`--require-acceptance`): only nodes that passed `kube-rdma acceptance run
--label` take RDMA pods.

A node that failed, or was never tested, fails whatever is freed: passing takes an admin's run,
not preemption. The acceptance run's own pods (labelled with the run) pass, or no node could
ever be tested.
"""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.filters.verdict import PASS, Verdict, never
from extender.pairing import Rails
from extender.podview import PodView
from kube_rdma.core import keys

FAILED = (
    f"node failed fabric acceptance ({keys.ACCEPTANCE}={keys.ACCEPTANCE_FAILED}); fix it and "
    "run kube-rdma acceptance run --label on it again"
)
UNTESTED = (
    f"node has not passed fabric acceptance (no {keys.ACCEPTANCE} label); run kube-rdma "
    "acceptance run --label on it"
)


def check(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    if pod.acceptance_test:
        return PASS
    state = node.labels.get(keys.ACCEPTANCE)
    if state == keys.ACCEPTANCE_PASSED:
        return PASS
    return never(FAILED if state == keys.ACCEPTANCE_FAILED else UNTESTED)
