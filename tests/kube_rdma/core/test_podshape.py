"""The pod shape check: exact messages naming the field, and real pods pass."""

from __future__ import annotations

from typing import Any

import pytest

from kube_rdma.core.podshape import pod_problem
from testbed.builders import pods

CASES: list[tuple[str, Any, str | None]] = [
    ("pytorchjob", pods.pytorchjob("worker", 0, "team-a", {}), None),
    ("sidecar", pods.sidecar_pod("team-a", {"kube-rdma.io/inject": "true"}), None),
    (
        "nulls-are-absent",
        {"metadata": None, "spec": {"containers": None, "hostNetwork": None}},
        None,
    ),
    (
        "quantities-as-numbers",
        {"spec": {"containers": [{"resources": {"limits": {"a/b": 1}}}]}},
        None,
    ),
    ("not-an-object", [], "the pod is a JSON list, expected an object"),
    ("spec-string", {"spec": "x"}, "spec is a JSON string, expected an object"),
    (
        "container-number",
        {"spec": {"containers": [{}, 5]}},
        "spec.containers[1] is a JSON number, expected an object",
    ),
    (
        "null-container",
        {"spec": {"initContainers": [None]}},
        "spec.initContainers[0] is null, expected an object",
    ),
    (
        "env-entry-list",
        {"spec": {"containers": [{"env": [[]]}]}},
        "spec.containers[0].env[0] is a JSON list, expected an object",
    ),
    (
        "field-path-number",
        {"spec": {"containers": [{"env": [{"valueFrom": {"fieldRef": {"fieldPath": 3}}}]}]}},
        "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath is a JSON number, expected a "
        "string",
    ),
    (
        "quantity-object",
        {"spec": {"containers": [{"resources": {"requests": {"cpu": {}}}}]}},
        "spec.containers[0].resources.requests['cpu'] is a JSON object, expected a string or an "
        "integer or a number",
    ),
    (
        "label-null",
        {"metadata": {"labels": {"a": None}}},
        "metadata.labels['a'] is null, expected a string",
    ),
    (
        "run-as-user-boolean",
        {"spec": {"securityContext": {"runAsUser": True}}},
        "spec.securityContext.runAsUser is a JSON boolean, expected an integer",
    ),
    (
        "resource-claim-number",
        {"spec": {"resourceClaims": [{"name": "gpu"}, 7]}},
        "spec.resourceClaims[1] is a JSON number, expected an object",
    ),
    (
        "claim-request-object",
        {"spec": {"containers": [{"resources": {"claims": [{"name": "a", "request": {}}]}}]}},
        "spec.containers[0].resources.claims[0].request is a JSON object, expected a string",
    ),
    (
        "host-network-string",
        {"spec": {"hostNetwork": "true"}},
        "spec.hostNetwork is a JSON string, expected true or false",
    ),
]


@pytest.mark.parametrize(("pod", "problem"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_problem(pod: Any, problem: str | None) -> None:
    assert pod_problem(pod) == problem
