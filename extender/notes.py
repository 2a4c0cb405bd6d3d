"""Notes on a node that `explain` shows: facts that change no verdict or score, but that an admin
looking at a slow or failing job should see.

RDMA over Converged Ethernet takes its path MTU from the netdev's MTU (the largest RoCE MTU
below it: 4096 under a 9000-byte netdev, 1024 under 1500). Rails of one node with different MTUs
move different amounts per packet, and NCCL spreads a collective over all of them, so the job runs
at the pace of the smallest; it is nearly always a configuration slip on one interface.

A device a node publishes through DRA whose PCI address the agent's topology does not list
(kube_rdma/core/dra/alignment.py) is one whose GPU-NIC level the scores cannot know.
"""

from __future__ import annotations

from collections import defaultdict

from kube_rdma.core.dra.alignment import align
from kube_rdma.core.dra.index import NodeDevices
from kube_rdma.core.topology import Topology

SHOWN = 4


def node_notes(topology: Topology | None, devices: NodeDevices | None = None) -> tuple[str, ...]:
    if topology is None:
        return ()
    notes = (mtu_mismatch(topology), dra_unmatched(topology, devices))
    return tuple(note for note in notes if note)


def dra_unmatched(topology: Topology, devices: NodeDevices | None) -> str | None:
    """The devices the node publishes through DRA at PCI addresses the agent's topology does
    not list: the GPU-NIC levels the scores read say nothing about them."""
    if devices is None:
        return None
    unmatched = align(devices, topology).unmatched
    if not unmatched:
        return None
    more = f" and {len(unmatched) - SHOWN} more" if len(unmatched) > SHOWN else ""
    shown = ", ".join(unmatched[:SHOWN])
    return f"published through DRA, not in the agent's topology: {shown}{more}"


def mtu_mismatch(topology: Topology) -> str | None:
    """ "MTU differs between rails: 9000 on 7 rails, 1500 on mlx5_7 (eth7)" when the RoCE ports
    do not share one MTU: the most common MTU by count, the others by port."""
    ports: dict[int, list[str]] = defaultdict(list)
    for nic in topology.nics:
        roce = [p for p in nic.ports if p.link_layer == "Ethernet" and p.mtu is not None]
        for port in roce:
            name = nic.name if len(roce) == 1 else f"{nic.name}:{port.port}"
            ports[port.mtu or 0].append(f"{name} ({port.netdev})" if port.netdev else name)
    if len(ports) < 2:
        return None
    common, *others = sorted(ports.items(), key=lambda item: (-len(item[1]), -item[0]))
    count = len(common[1])
    parts = [f"{common[0]} on {count} rail{'s' if count > 1 else ''}"]
    parts += [f"{mtu} on {', '.join(names)}" for mtu, names in others]
    return "MTU differs between rails: " + ", ".join(parts)
