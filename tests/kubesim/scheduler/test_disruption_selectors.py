"""Budget selectors as kube-scheduler reads them (metav1.LabelSelectorAsSelector): matchLabels
and every matchExpressions operator; a missing, empty or unusable selector matches nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.scheduler.disruption import selector_matches

LABELS = {"app": "db", "tier": "gold"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        (None, False),
        ({}, False),
        ({"matchLabels": {"app": "db"}}, True),
        ({"matchLabels": {"app": "web"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["tin"]}]}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["tin"]}]}, True),
        ({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
        ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False),
        ({"matchExpressions": ["not a requirement"]}, False),
        (
            {
                "matchLabels": {"app": "db"},
                "matchExpressions": [{"key": "tier", "operator": "Exists"}],
            },
            True,
        ),
    ],
)
def test_selectors(selector: Any, matches: bool) -> None:
    assert selector_matches(selector, LABELS) is matches
