"""Port health across scans."""

from __future__ import annotations

import pytest

from agent.health import HealthTracker, rdma_ready
from kube_rdma.core.topology import Nic, Port, Topology


def node(state: str = "ACTIVE", symbol_errors: int = 0, link_downed: int = 0) -> Topology:
    port = Port(
        port=1,
        state=state,
        link_layer="Ethernet",
        healthy=state == "ACTIVE",
        counters={"symbol_error": symbol_errors, "link_downed": link_downed},
    )
    return Topology(nics=(Nic(name="mlx5_0", ports=(port,)),))


def healthy(topology: Topology) -> bool:
    return topology.nics[0].ports[0].healthy


def test_steady_port_stays_healthy() -> None:
    tracker = HealthTracker(recover_after=2)
    assert [healthy(tracker.update(node(symbol_errors=5))) for _ in range(3)] == [True] * 3


def test_growing_counters_make_a_port_unhealthy_until_clean_scans() -> None:
    tracker = HealthTracker(recover_after=3)
    scans = [
        node(symbol_errors=0),  # baseline
        node(symbol_errors=4),  # errors: unhealthy
        node(symbol_errors=4),  # clean 1
        node(symbol_errors=4),  # clean 2
        node(symbol_errors=4, link_downed=1),  # errors again: the count restarts
        node(symbol_errors=4, link_downed=1),  # clean 1
        node(symbol_errors=4, link_downed=1),  # clean 2
        node(symbol_errors=4, link_downed=1),  # clean 3: healthy
    ]
    assert [healthy(tracker.update(s)) for s in scans] == [
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        True,
    ]


def test_port_down_then_up_needs_clean_scans() -> None:
    tracker = HealthTracker(recover_after=2)
    scans = [node(), node(state="DOWN"), node(), node(), node()]
    assert [healthy(tracker.update(s)) for s in scans] == [True, False, False, True, True]


def test_counter_reset_is_a_new_baseline() -> None:
    tracker = HealthTracker(recover_after=2)
    assert healthy(tracker.update(node(symbol_errors=100)))
    assert healthy(tracker.update(node(symbol_errors=0)))
    assert healthy(tracker.update(node(symbol_errors=0)))


def test_rdma_ready_needs_an_active_healthy_port() -> None:
    assert rdma_ready(node()) is True
    assert rdma_ready(node(state="DOWN")) is False
    assert rdma_ready(Topology()) is False


def test_recover_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        HealthTracker(recover_after=0)
