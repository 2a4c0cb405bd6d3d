from __future__ import annotations

import pytest

from webhook.podsecurity import Item, Level, enforced_level, forbidden

ALL = {Item.IPC_LOCK, Item.HOST_PATH, Item.HOST_NETWORK}


@pytest.mark.parametrize(
    ("labels", "level", "warning"),
    [
        ({}, Level.PRIVILEGED, None),
        ({"pod-security.kubernetes.io/enforce": "privileged"}, Level.PRIVILEGED, None),
        ({"pod-security.kubernetes.io/enforce": "baseline"}, Level.BASELINE, None),
        ({"pod-security.kubernetes.io/enforce": "restricted"}, Level.RESTRICTED, None),
        ({"pod-security.kubernetes.io/warn": "restricted"}, Level.PRIVILEGED, None),
        (
            {"pod-security.kubernetes.io/enforce": "Baseline"},
            Level.RESTRICTED,
            "pod-security.kubernetes.io/enforce='Baseline' is not a Pod Security level; it is "
            "enforced as restricted",
        ),
    ],
)
def test_enforced_level(labels: dict[str, str], level: Level, warning: str | None) -> None:
    assert enforced_level(labels) == (level, warning)


@pytest.mark.parametrize(
    ("level", "wanted", "expected"),
    [
        (Level.PRIVILEGED, ALL, []),
        (Level.BASELINE, ALL, [Item.IPC_LOCK, Item.HOST_PATH, Item.HOST_NETWORK]),
        (Level.RESTRICTED, {Item.HOST_NETWORK}, [Item.HOST_NETWORK]),
        (Level.BASELINE, set(), []),
    ],
)
def test_forbidden(level: Level, wanted: set[Item], expected: list[Item]) -> None:
    assert forbidden(level, wanted) == expected


def test_unlabelled_namespace_takes_the_cluster_default() -> None:
    assert enforced_level({}, Level.BASELINE) == (Level.BASELINE, None)
