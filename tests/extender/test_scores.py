"""Each scorer and the pairing behind affinity, table-driven: exact values."""

from __future__ import annotations

import pytest

from extender.book.reservations import NO_PLANS
from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.pairing import chosen_nics, pcie_gbps, profile, quality, rails
from extender.podview import pod_view
from extender.scores import registry
from extender.weights import CRITERIA, DEFAULT, Weights
from kube_rdma.core.topology import DataDirect
from testbed.builders import nodes

NODES = [
    nodes.node("eth-ok", nodes.hgx()),
    nodes.node("eth-rail3-down", nodes.hgx(down=(3,))),
    nodes.node("eth-200g", nodes.hgx(rate=200.0)),
    nodes.node("shared-nics", nodes.hgx(shared=True)),
    nodes.node("half-busy", nodes.hgx()),
    nodes.node("no-agent", None),
    nodes.node("gen5", nodes.hgx(pcie=nodes.GEN5_X16)),
    # NIC 3's Gen5 x16 link came up at 5 GT/s (Gen2): 5 x 16 x 8/10 = 64 Gb/s of its 400
    nodes.node("nic3-gen2", nodes.hgx(pcie=nodes.GEN5_X16, nic_links={3: nodes.trained(5.0)})),
    # GPU 2's link came up at 16 GT/s (Gen4): it reaches NIC 2 as PXB, the others one worse
    nodes.node("gpu2-x8", nodes.hgx(pcie=nodes.GEN5_X16, gpu_links={2: nodes.trained(width=8)})),
]
RUNNING = [
    nodes.pod("running", gpus=4, rdma={"rdma/hca": 4}, node_name="half-busy", phase="Running")
]
WEIGHTS = Weights(affinity=3, rate=1, binpack=2, locality=0)


@pytest.fixture(scope="module")
def engine() -> Engine:
    cluster = Cluster()
    cluster.replace_nodes(NODES)
    cluster.replace_pods(RUNNING)
    return Engine(cluster, lambda: WEIGHTS)


CASES = [
    # pod GPUs, node: affinity, rate, binpack, locality
    (8, "eth-ok", {"affinity": 10.0, "rate": 10.0, "binpack": 10.0, "locality": 10.0}),
    # 7 usable NICs: 7 GPUs get their PIX NIC, the 8th none (0): 7 * 10 / 8
    (8, "eth-rail3-down", {"affinity": 8.75, "rate": 10.0, "binpack": 10.0, "locality": 10.0}),
    (8, "eth-200g", {"affinity": 10.0, "rate": 5.0, "binpack": 10.0, "locality": 10.0}),
    # 4 NICs for 8 GPUs: 4 GPUs get a PIX NIC, and no NIC is left for the other 4
    (8, "shared-nics", {"affinity": 5.0, "rate": 10.0, "binpack": 10.0, "locality": 10.0}),
    (2, "eth-ok", {"affinity": 10.0, "rate": 10.0, "binpack": 2.5, "locality": 10.0}),
    (2, "half-busy", {"affinity": 10.0, "rate": 10.0, "binpack": 7.5, "locality": 10.0}),
    (2, "no-agent", {"affinity": 0.0, "rate": 0.0, "binpack": 2.5, "locality": 10.0}),
    # a Gen5 x16 link (504 Gb/s) does not cap a 400 Gb/s port
    (8, "gen5", {"affinity": 10.0, "rate": 10.0, "binpack": 10.0, "locality": 10.0}),
    # 8 rails: 7 at 400 and one at 64 Gb/s, mean 358: 10 * 358 / 400
    (8, "nic3-gen2", {"affinity": 10.0, "rate": 8.95, "binpack": 10.0, "locality": 10.0}),
    # 2 rails: the fastest two, at 400
    (2, "nic3-gen2", {"affinity": 10.0, "rate": 10.0, "binpack": 2.5, "locality": 10.0}),
    # 7 GPUs at PIX and GPU 2 at PXB (8): (7 * 10 + 8) / 8
    (8, "gpu2-x8", {"affinity": 9.75, "rate": 10.0, "binpack": 10.0, "locality": 10.0}),
    # 2 GPUs: two GPUs with full links have their PIX NICs
    (2, "gpu2-x8", {"affinity": 10.0, "rate": 10.0, "binpack": 2.5, "locality": 10.0}),
]


@pytest.mark.parametrize(
    ("gpus", "node", "scores"), CASES, ids=[f"{c[0]}gpu@{c[1]}" for c in CASES]
)
def test_scores(engine: Engine, gpus: int, node: str, scores: dict[str, float]) -> None:
    pod = pod_view(nodes.pod("p", gpus=gpus, rdma={"rdma/hca": max(gpus, 1)}))
    assert engine.scores(pod, node) == scores


def test_weighted_mean_and_priorities(engine: Engine) -> None:
    pod = pod_view(nodes.pod("p", gpus=2, rdma={"rdma/hca": 2}))
    assert engine.prioritize(pod, ["eth-ok", "half-busy"]) == {
        "eth-ok": (3 * 10 + 1 * 10 + 2 * 2.5) / 6,
        "half-busy": (3 * 10 + 1 * 10 + 2 * 7.5) / 6,
    }


def test_a_pod_without_gpu_or_rdma_gets_equal_scores(engine: Engine) -> None:
    pod = pod_view(nodes.pod("web", gpus=0, rdma={}, network=None))
    assert engine.prioritize(pod, ["eth-ok", "no-agent"]) == {"eth-ok": 0.0, "no-agent": 0.0}


def test_pairing_profile_and_chosen_nics() -> None:
    found = rails(nodes.hgx(down=(3,)), "Ethernet", None)
    assert found.matched == (7, 7, 7, 7, 7)
    assert profile(found, 8) == {"PIX": 7}
    # a 9th NIC, on the other socket: GPU 3 reaches it only at SYS
    nine = rails(nodes.hgx(down=(3,), nics=9), "Ethernet", None)
    assert nine.matched == (7, 7, 7, 7, 8)
    assert profile(nine, 8) == {"PIX": 7, "SYS": 1}
    assert quality(nine, 8) == (7 * 10 + 1) / 8
    assert quality(found, 4) == 10.0
    chosen = chosen_nics(nodes.hgx(down=(3,)), found.usable_nics, 8)
    assert sorted(chosen) == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
    assert chosen_nics(nodes.hgx(), rails(nodes.hgx(), "Ethernet", None).usable_nics, 2) == [
        "mlx5_0",
        "mlx5_1",
    ]


def test_pcie_bandwidth_and_usable_rate() -> None:
    assert pcie_gbps(nodes.GEN5_X16) == 32.0 * 16 * (128 / 130)  # 504.12
    assert round(pcie_gbps(nodes.trained(width=8)), 2) == 252.06
    assert pcie_gbps(nodes.trained(8.0, 4)) == 8.0 * 4 * (128 / 130)  # 31.51
    assert pcie_gbps(nodes.trained(2.5, 16)) == 32.0  # 8b/10b below 8 GT/s
    capped = rails(nodes.hgx(nic_links={0: nodes.trained(width=8)}), "Ethernet", None)
    assert capped.rates == (400.0,) * 7 + (32.0 * 8 * (128 / 130),)
    # the min-rate filter reads the port's link rate, not the capped one
    assert rails(nodes.hgx(nic_links={0: nodes.trained(width=8)}), None, 400.0).usable == 8


def test_a_gpu_whose_link_lost_lanes_pairs_one_level_worse() -> None:
    board = nodes.hgx(gpu_links={2: nodes.trained(width=8), 7: nodes.trained(width=4)})
    found = rails(board, "Ethernet", None)
    assert found.matched == (8, 8, 8, 8, 8)  # the wiring, which the filters judge
    assert found.scored == (6, 8, 8, 8, 8)  # GPUs 2 and 7 at PXB, what affinity scores
    assert quality(found, 8) == (6 * 10 + 2 * 8) / 8


def test_an_idle_gpu_at_a_lower_link_speed_is_not_degraded() -> None:
    """Idle GPUs drop their link speed to save power; only lost lanes count against a GPU."""
    board = nodes.hgx(
        pcie=nodes.GEN5_X16, gpu_links={2: nodes.trained(2.5), 5: nodes.trained(16.0)}
    )
    assert rails(board, "Ethernet", None).scored is None
    assert rails(nodes.hgx(pcie=nodes.GEN5_X16), "Ethernet", None).scored is None


def test_every_weighted_criterion_has_its_scorer_in_the_weights_order() -> None:
    assert CRITERIA == ("affinity", "rate", "binpack", "locality")
    assert list(registry(NO_PLANS)) == list(CRITERIA)
    assert list(DEFAULT.as_dict()) == list(CRITERIA)


def test_a_data_direct_nic_is_capped_by_its_data_direct_link_not_its_own() -> None:
    """GPU memory traffic of a ConnectX-8 with Data Direct crosses the Data Direct function's
    link: a narrow own link does not cap it, a narrow Data Direct link does."""
    board = nodes.hgx(nic_links={0: nodes.trained(width=4)})
    nic = board.nics[0]
    direct = DataDirect(pci="0000:1a:00.1", pcie=nodes.GEN5_X16)
    served = board.model_copy(
        update={"nics": (nic.model_copy(update={"data_direct": direct}), *board.nics[1:])}
    )
    assert rails(served, "Ethernet", None).rates == (400.0,) * 8
    narrow = DataDirect(pci="0000:1a:00.1", pcie=nodes.trained(width=8))
    capped = board.model_copy(
        update={"nics": (nic.model_copy(update={"data_direct": narrow}), *board.nics[1:])}
    )
    assert rails(capped, "Ethernet", None).rates == (400.0,) * 7 + (32.0 * 8 * (128 / 130),)
