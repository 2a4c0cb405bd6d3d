"""Each scorer and the pairing behind affinity, table-driven: exact values."""

from __future__ import annotations

import pytest

from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.gangs.reservations import NO_PLANS
from extender.pairing import chosen_nics, profile, quality, rails
from extender.podview import pod_view
from extender.scores import registry
from extender.weights import CRITERIA, DEFAULT, Weights
from testbed.builders import nodes

NODES = [
    nodes.node("eth-ok", nodes.hgx()),
    nodes.node("eth-rail3-down", nodes.hgx(down=(3,))),
    nodes.node("eth-200g", nodes.hgx(rate=200.0)),
    nodes.node("shared-nics", nodes.hgx(shared=True)),
    nodes.node("half-busy", nodes.hgx()),
    nodes.node("no-agent", None),
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


def test_every_weighted_criterion_has_its_scorer_in_the_weights_order() -> None:
    assert CRITERIA == ("affinity", "rate", "binpack", "locality")
    assert list(registry(NO_PLANS)) == list(CRITERIA)
    assert list(DEFAULT.as_dict()) == list(CRITERIA)
