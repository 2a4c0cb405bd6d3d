"""Notes on a node, table-driven: the exact text explain shows."""

from __future__ import annotations

import pytest

from extender.notes import dra_unmatched, node_notes
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.topology import LinkLayer, Nic, Port, Topology
from testbed.builders import nodes
from tests.kube_rdma.core.dra.fixtures import gpu_slice, nic_slice
from tests.kube_rdma.core.dra.test_alignment import TOPOLOGY


def two_ports(first: int, second: int, link_layer: LinkLayer = "Ethernet") -> Topology:
    """One dual-port NIC whose ports have MTUs `first` and `second`."""
    ports = tuple(
        Port(port=n, state="ACTIVE", link_layer=link_layer, healthy=True, netdev=f"eth{n}", mtu=m)
        for n, m in ((1, first), (2, second))
    )
    return Topology(nics=(Nic(name="mlx5_0", ports=ports),))


CASES = [
    ("no-document", None, ()),
    ("no-mtus", nodes.hgx(), ()),
    ("one-mtu", nodes.hgx(mtu=9000), ()),
    ("infiniband-ports-are-not-judged", two_ports(9000, 1500, "InfiniBand"), ()),
    (
        "one-rail-off",
        nodes.hgx(mtu=9000, mtus={7: 1500}),
        ("MTU differs between rails: 9000 on 7 rails, 1500 on mlx5_7 (eth7)",),
    ),
    (
        "three-values",
        nodes.hgx(mtu=9000, mtus={6: 1500, 7: 4200}),
        (
            "MTU differs between rails: 9000 on 6 rails, 4200 on mlx5_7 (eth7), "
            "1500 on mlx5_6 (eth6)",
        ),
    ),
    (
        "half-and-half",
        nodes.hgx(gpus=4, mtu=1500, mtus={2: 9000, 3: 9000}),
        ("MTU differs between rails: 9000 on 2 rails, 1500 on mlx5_0 (eth0), mlx5_1 (eth1)",),
    ),
    (
        "ports-of-one-nic",
        two_ports(9000, 1500),
        ("MTU differs between rails: 9000 on 1 rail, 1500 on mlx5_0:2 (eth2)",),
    ),
]


@pytest.mark.parametrize(("topology", "notes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_node_notes(topology: Topology | None, notes: tuple[str, ...]) -> None:
    assert node_notes(topology) == notes


def test_dra_devices_the_agent_does_not_list_are_noted() -> None:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1"), nic_slice("n1")])
    assert dra_unmatched(TOPOLOGY, index.node("n1")) == (
        "published through DRA, not in the agent's topology: NIC pci-0000-27-00-0 (0000:27:00.0)"
    )
    assert dra_unmatched(TOPOLOGY, None) is None
