"""numFeasibleNodesToFind of kubernetes pkg/scheduler/schedule_one.go, and which candidate lists
are samples."""

from __future__ import annotations

import pytest

from extender.gangs.sampling import num_feasible_nodes_to_find, sampled

FEASIBLE = [
    # nodes, percentageOfNodesToScore, nodes kube-scheduler looks for
    (6, 0, 6),  # below minFeasibleNodesToFind (100): every node
    (99, 10, 99),
    (100, 0, 100),  # adaptive 50 - 0 = 50 %, but at least 100
    (120, 0, 100),
    (1_000, 0, 420),  # 50 - 8 = 42 %
    (5_000, 0, 500),  # 50 - 40 = 10 %
    (10_000, 0, 500),  # 50 - 80 < 5: 5 %
    (5_000, 100, 5_000),
    (5_000, 1, 100),  # 50 nodes, raised to 100
    (300, 50, 150),
]


@pytest.mark.parametrize(("nodes", "percentage", "wanted"), FEASIBLE)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, wanted: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == wanted


SAMPLES = [
    # candidates, nodes, percentage, a sample?
    (500, 5_000, 0, True),  # exactly as many as kube-scheduler looks for
    (499, 5_000, 0, False),  # fewer: every feasible node
    (5_000, 5_000, 100, False),  # all nodes looked at: never a sample
    (4_000, 5_000, 100, False),
    (99, 99, 0, False),  # small clusters are never sampled
    (100, 120, 0, True),
]


@pytest.mark.parametrize(("candidates", "nodes", "percentage", "expected"), SAMPLES)
def test_sampled(candidates: int, nodes: int, percentage: int, expected: bool) -> None:
    assert sampled(candidates, nodes, percentage) is expected
