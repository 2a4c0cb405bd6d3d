"""Port health across scans: error counters judged as rates over windows, with hysteresis."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agent.error_rules import DEFAULT_ERROR_RULES, ErrorRule
from agent.health import HealthTracker, rdma_ready
from kube_rdma.core.topology import Nic, Port, Topology


class Clock:
    """Seconds that the test sets; what the tracker reads as now."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def node(state: str = "ACTIVE", **counters: int) -> Topology:
    port = Port(
        port=1,
        state=state,
        link_layer="Ethernet",
        healthy=state == "ACTIVE",
        counters={"symbol_error": 0, "link_downed": 0} | counters,
    )
    return Topology(nics=(Nic(name="mlx5_0", ports=(port,)),))


def port(topology: Topology) -> Port:
    return topology.nics[0].ports[0]


def healthy(topology: Topology) -> bool:
    return port(topology).healthy


Scan = tuple[float, Topology]
"""A scan's time in seconds and what it read."""


def judge(scans: Sequence[Scan], recover_after: int = 2, **rules: ErrorRule) -> list[bool]:
    clock = Clock()
    tracker = HealthTracker(recover_after, rules or DEFAULT_ERROR_RULES, clock)
    verdicts = []
    for at, topology in scans:
        clock.now = at
        verdicts.append(healthy(tracker.update(topology)))
    return verdicts


def every_minute(*topologies: Topology) -> list[Scan]:
    return [(60.0 * i, topology) for i, topology in enumerate(topologies)]


def test_steady_port_stays_healthy() -> None:
    assert judge(every_minute(*[node(symbol_error=5)] * 3)) == [True] * 3


def test_growth_since_the_last_scan_with_hysteresis() -> None:
    """Rules of any increase within one scan interval: every growth counts, and recovery needs
    `recover_after` clean scans in a row."""
    scans = every_minute(
        node(symbol_error=0),  # baseline
        node(symbol_error=4),  # errors: unhealthy
        node(symbol_error=4),  # clean 1
        node(symbol_error=4),  # clean 2
        node(symbol_error=4, link_downed=1),  # errors again: the count restarts
        node(symbol_error=4, link_downed=1),  # clean 1
        node(symbol_error=4, link_downed=1),  # clean 2
        node(symbol_error=4, link_downed=1),  # clean 3: healthy
    )
    each_scan = ErrorRule(0, 60)
    verdicts = judge(scans, recover_after=3, symbol_error=each_scan, link_downed=each_scan)
    assert verdicts == [True, False, False, False, False, False, False, True]


def test_port_down_then_up_needs_clean_scans() -> None:
    scans = every_minute(node(), node(state="DOWN"), node(), node(), node())
    assert judge(scans) == [True, False, False, True, True]


@pytest.mark.parametrize(
    ("scans", "verdicts"),
    [
        pytest.param(
            every_minute(node(), node(symbol_error=1), node(symbol_error=1)),
            [True, True, True],
            id="one-symbol-error-is-a-flake",
        ),
        pytest.param(
            [(0, node()), (30, node(symbol_error=50)), (290, node(symbol_error=50))],
            [True, True, True],
            id="symbol-errors-at-10-a-minute-are-allowed",
        ),
        pytest.param(
            [(0, node()), (30, node(symbol_error=51)), (60, node(symbol_error=51))],
            [True, False, False],
            id="symbol-errors-over-10-a-minute-in-5-minutes",
        ),
        pytest.param(
            # 60 in the first 5 minutes would be too many, but they came over 6 minutes.
            [(60.0 * i, node(symbol_error=10 * i)) for i in range(7)],
            [True] * 7,
            id="symbol-errors-spread-over-more-than-the-window",
        ),
        pytest.param(
            [(0, node()), *[(at, node(link_downed=1)) for at in (60, 600, 660, 720)]],
            [True, False, False, False, True],
            id="link-down-keeps-the-port-out-for-10-minutes-then-clean-scans",
        ),
        pytest.param(
            every_minute(node(port_xmit_discards=0), node(port_xmit_discards=10**6)),
            [True, True],
            id="discards-are-information-only",
        ),
        pytest.param(
            every_minute(node(symbol_error=100), node(symbol_error=0), node(symbol_error=0)),
            [True, True, True],
            id="counter-reset-is-a-new-baseline",
        ),
        pytest.param(
            [(60.0 * i, node(link_error_recovery=count)) for i, count in enumerate([0, 5, 6])],
            [True, True, False],
            id="link-error-recovery-over-5-in-10-minutes",
        ),
    ],
)
def test_default_rules(scans: list[Scan], verdicts: list[bool]) -> None:
    assert judge(scans) == verdicts


def test_rules_decide_which_counters_judge() -> None:
    scans = every_minute(node(port_rcv_errors=0), node(port_rcv_errors=1000))
    assert judge(scans, link_downed=ErrorRule(0, 600)) == [True, True]


def test_error_rates_appear_once_each_window_has_passed() -> None:
    clock = Clock()
    rules = {"symbol_error": ErrorRule(10, 300), "link_downed": ErrorRule(0, 600)}
    tracker = HealthTracker(2, rules, clock)
    rates = []
    for minute, symbol_errors, link_downed in [(0, 0, 0), (4, 30, 0), (5, 33, 1), (10, 33, 1)]:
        clock.now = 60.0 * minute
        scanned = node(symbol_error=symbol_errors, link_downed=link_downed, port_xmit_discards=7)
        rates.append(port(tracker.update(scanned)).error_rates)
    assert rates == [
        None,
        None,
        {"symbol_error": 6.6},  # 33 in the first 5 minutes
        {"symbol_error": 0.0, "link_downed": 0.1},  # 1 in 10 minutes
    ]


def test_counter_reset_gives_no_negative_rate() -> None:
    clock = Clock()
    tracker = HealthTracker(2, {"symbol_error": ErrorRule(10, 60)}, clock)
    for at, symbol_errors in [(0, 500), (30, 0), (60, 3)]:
        clock.now = at
        scanned = port(tracker.update(node(symbol_error=symbol_errors)))
    assert (scanned.healthy, scanned.error_rates) == (True, {"symbol_error": 3.0})


def test_the_document_carries_the_rates() -> None:
    from kube_rdma.core.topology import encode

    clock = Clock()
    tracker = HealthTracker(2, {"symbol_error": ErrorRule(10, 60)}, clock)
    tracker.update(node())
    clock.now = 60
    assert '"errorRates":{"symbol_error":2.0}' in encode(tracker.update(node(symbol_error=2)))


def test_history_is_kept_for_the_longest_window_only() -> None:
    clock = Clock()
    tracker = HealthTracker(2, {"link_downed": ErrorRule(0, 600)}, clock)
    for minute in range(60):
        clock.now = 60.0 * minute
        tracker.update(node(link_downed=1 if minute == 5 else 0))
    kept = tracker._growth[("mlx5_0", 1)]._times
    assert kept == [60.0 * minute for minute in range(49, 60)]


def test_rdma_ready_needs_an_active_healthy_port() -> None:
    assert rdma_ready(node()) is True
    assert rdma_ready(node(state="DOWN")) is False
    assert rdma_ready(Topology()) is False


def test_recover_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        HealthTracker(recover_after=0)
