"""What the cluster model reads of a Node's topology document (the agent's annotation): the
document, or why the node has none, and the part of it the filters and scores depend on, so
that nodes alike in that share their verdicts.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from kube_rdma.core import keys
from kube_rdma.core.topology import Topology, decode

log = logging.getLogger("kube_rdma.extender")


def read_topology(node: str, annotation: str | None) -> tuple[Topology | None, str | None]:
    """The node's topology document, or None and why."""
    if annotation is None:
        return None, f"no {keys.TOPOLOGY} annotation (is the kube-rdma agent running there?)"
    try:
        return decode(annotation), None
    except (ValidationError, ValueError) as e:
        reason = f"malformed {keys.TOPOLOGY} annotation: {str(e).splitlines()[0][:200]}"
        log.warning("node %s has no usable topology: %s", node, reason, extra={"node": node})
        return None, reason


def rails_signature(topology: Topology) -> tuple[Any, ...]:
    """What the filters and scores read of a document: every port's link layer, state, health
    and rate, each NIC's PCIe link, which GPUs' links trained down, the GPU-NIC levels and the
    GPUDirect RDMA paths; not addresses, GIDs, counters or MTUs."""
    nics = tuple(
        (
            nic.name,
            tuple((p.link_layer, p.state, p.healthy, p.rate_gbps) for p in nic.ports),
            (nic.pcie.speed_gts, nic.pcie.width) if nic.pcie else None,
        )
        for nic in topology.nics
    )
    degraded = tuple(g.index for g in topology.gpus if g.pcie is not None and g.pcie.narrowed)
    pairs = tuple((p.gpu, p.nic, p.level) for p in topology.pairs)
    gdr = topology.gdr.available if topology.gdr else None
    return nics, len(topology.gpus), degraded, pairs, gdr
