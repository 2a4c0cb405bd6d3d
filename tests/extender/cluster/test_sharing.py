"""Nodes of one shape share one object for each part of their topology documents that is equal
in full; a node's addresses stay its own, and a node whose document changes gets its own parts
without touching another node's."""

from __future__ import annotations

from typing import Any

from extender.cluster.interning import Shared
from extender.cluster.model import Cluster
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import (
    Gid,
    Gpu,
    Level,
    Nic,
    Pair,
    PcieLink,
    Port,
    Topology,
    decode,
    encode,
)

LINK = PcieLink(speed_gts=32.0, width=16, max_speed_gts=32.0, max_width=16)


def board(address: str, *, rate: float = 400.0, width: int = 16, numa: int | None = 0) -> Topology:
    """An eight-GPU, two-NIC board; `address` is the node's own (its GIDs)."""
    gpus = tuple(
        Gpu(
            index=i,
            pci=f"0000:{i:02x}:00.0",
            numa=numa,
            pcie=LINK.model_copy(update={"width": width}),
        )
        for i in range(8)
    )
    nics = tuple(
        Nic(
            name=f"mlx5_{n}",
            pci=f"0000:{0x80 + n:02x}:00.0",
            numa=0,
            pcie=LINK,
            ports=(
                Port(
                    port=1,
                    state="ACTIVE",
                    link_layer="Ethernet",
                    rate_gbps=rate,
                    healthy=True,
                    gids=(Gid(index=3, gid=f"::ffff:{address}", type="RoCE v2", ip=address),),
                    counters={"link_downed": 0},
                ),
            ),
        )
        for n in range(2)
    )
    pairs = tuple(
        Pair(gpu=g, nic=f"mlx5_{n}", level=Level.PIX if g // 4 == n else Level.SYS)
        for g in range(8)
        for n in range(2)
    )
    return Topology(gpus=gpus, nics=nics, pairs=pairs)


def node(name: str, topology: Topology | str, labels: dict[str, str] | None = None) -> Json:
    document = topology if isinstance(topology, str) else encode(topology)
    return {
        "metadata": {
            "name": name,
            "labels": labels or {},
            "annotations": {keys.TOPOLOGY: document},
        },
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def topology_of(cluster: Cluster, name: str) -> Topology:
    view = cluster.node(name)
    assert view is not None
    assert view.topology is not None
    return view.topology


def test_nodes_of_one_shape_share_their_parts_and_keep_their_addresses() -> None:
    cluster = Cluster()
    for i in range(4):
        cluster.upsert_node(node(f"n{i}", board(f"10.0.0.{i}"), {"rack": f"r{i}"}))
    a, b = topology_of(cluster, "n2"), topology_of(cluster, "n3")
    assert a.gpus is b.gpus
    assert a.pairs is b.pairs
    assert a.nics[0].pcie is b.nics[0].pcie
    assert a.nics[0].ports[0].counters is b.nics[0].ports[0].counters
    # the GIDs are each node's own, and so are the parts holding them
    assert a.nics[0].ports[0].gids[0].ip == "10.0.0.2"
    assert b.nics[0].ports[0].gids[0].ip == "10.0.0.3"
    assert a.nics is not b.nics
    # what every node reads is its own document, whole
    for i in range(4):
        assert topology_of(cluster, f"n{i}") == board(f"10.0.0.{i}")
        view = cluster.node(f"n{i}")
        assert view is not None
        assert view.labels == {"rack": f"r{i}"}


def test_equal_documents_are_one_object() -> None:
    cluster = Cluster()
    for name in ("a", "b", "c"):
        cluster.upsert_node(node(name, board("10.0.0.1")))
    assert topology_of(cluster, "b") is topology_of(cluster, "c")


def test_a_changed_document_gets_its_own_parts_and_leaves_the_others() -> None:
    cluster = Cluster()
    for i in range(4):
        cluster.upsert_node(node(f"n{i}", board(f"10.0.0.{i}")))
    before = topology_of(cluster, "n1")
    shared_gpus = before.gpus
    # n0's GPU links trained down to x8 and its ports to 200 Gb/s
    cluster.upsert_node(node("n0", board("10.0.0.0", rate=200.0, width=8)))
    changed = topology_of(cluster, "n0")
    assert changed == board("10.0.0.0", rate=200.0, width=8)
    assert changed.gpus is not shared_gpus
    assert changed.gpus[0].pcie is not None
    assert changed.gpus[0].pcie.width == 8
    after = topology_of(cluster, "n1")
    assert after is before
    assert after.gpus is shared_gpus
    assert after == board("10.0.0.1")
    assert all(g.pcie is not None and g.pcie.width == 16 for g in after.gpus)
    assert after.nics[0].ports[0].rate_gbps == 400.0
    view0, view1 = cluster.node("n0"), cluster.node("n1")
    assert view0 is not None
    assert view1 is not None
    assert view0.rails_key != view1.rails_key


def test_which_fields_a_document_set_is_part_of_what_is_shared() -> None:
    shared = Shared()
    stated = shared.topology(decode('{"version":1,"gpus":[{"index":0,"numa":null}]}'))
    absent = shared.topology(decode('{"version":1,"gpus":[{"index":0}]}'))
    assert stated == absent  # equal values; but one document named the field, one did not
    assert stated.gpus[0].model_fields_set == {"index", "numa"}
    assert absent.gpus[0].model_fields_set == {"index"}
    assert stated.gpus[0] is not absent.gpus[0]


def test_equal_scalars_of_other_types_are_not_confused() -> None:
    shared = Shared()
    parts: list[Any] = [
        shared.topology(decode(encode(board("10.0.0.1", rate=r)))) for r in (1.0, 1.0)
    ]
    assert parts[0].nics[0].ports[0].rate_gbps == 1.0
    assert shared.topology(decode(encode(board("10.0.0.1", numa=1)))).gpus[0].numa == 1


def test_pruning_keeps_what_nodes_hold_and_forgets_the_rest() -> None:
    shared = Shared()
    held = [shared.topology(decode(encode(board(f"10.0.0.{i}")))) for i in range(50)]
    before = len(shared)
    kept = held[-2:]
    del held
    shared.prune()
    assert len(shared) < before - 40  # the other 48 nodes' addresses, at least
    again = shared.topology(decode(encode(board("10.9.9.9"))))
    assert again.gpus is kept[1].gpus
    assert again.pairs is kept[0].pairs
    assert kept[0] == board("10.0.0.48")
    assert kept[1] == board("10.0.0.49")
    assert again == board("10.9.9.9")
