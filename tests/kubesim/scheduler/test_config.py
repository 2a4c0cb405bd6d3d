"""kube-scheduler's arithmetic on its configuration, as tables; and the configuration's checks."""

from __future__ import annotations

import pytest

from kubesim.scheduler import SchedulerConfig, backoff_duration, num_feasible_nodes_to_find


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (50, None, 50),  # fewer than minFeasibleNodesToFind (100): every node
        (99, 10, 99),
        (100, None, 100),  # adaptive 50% = 50, raised to the 100 minimum
        (150, None, 100),  # 49% = 73
        (500, None, 230),  # 46%
        (1000, None, 420),  # 42%
        (5000, None, 500),  # 10%
        (10000, None, 500),  # 50 - 80 is below the 5% floor
        (5000, 0, 500),  # 0 is the adaptive default too
        (1000, 10, 100),
        (5000, 50, 2500),
        (5000, 100, 5000),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int | None, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


@pytest.mark.parametrize(
    ("attempts", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]
)
def test_backoff_doubles_up_to_the_cap(attempts: int, expected: float) -> None:
    assert backoff_duration(attempts, 1.0, 10.0) == expected


def test_an_invalid_config_says_every_problem() -> None:
    with pytest.raises(ValueError, match=r"^invalid SchedulerConfig") as invalid:
        SchedulerConfig(percentage_of_nodes_to_score=101, extender_weight=0, backoff_initial=20.0)
    assert str(invalid.value) == (
        "invalid SchedulerConfig: percentage_of_nodes_to_score must be 0 to 100, got 101; "
        "extender_weight must be positive, got 0; "
        "need 0 < backoff_initial <= backoff_max, got 20.0 and 10.0"
    )
