"""Pod cases for the webhook's end-to-end tests, and the runner that checks one.

A case is a pod as a training controller creates it, how the webhook must change it and what it
must warn. The runner sends it through a running webhook over HTTPS, applies the response's
JSON patch as the apiserver would, and checks the result against the exact expected pod, the
warnings, and the Kubernetes schemas; a second pass over the stored pod must change nothing.

Its asserts are the tests' own: tests/conftest.py has pytest rewrite this module so that a
failing one shows the values compared.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Protocol

import jsonpatch
import kubernetes_validate
import orjson

from kube_rdma.core.objects import Json
from testbed.builders import pods

K8S_VERSIONS = ("1.33.0", "1.37.0")
"""The schemas a webhook's result is validated against: the oldest Kubernetes minor kube-rdma
supports and the newest."""


class Reviewer(Protocol):
    """A client of a running webhook: an AdmissionReview's request in, its response out."""

    async def review(self, request: Json) -> Json: ...


@dataclass
class Case:
    name: str
    pod: Json
    expect: Callable[[Json], None] | None
    """Turns a copy of the pod into the expected result; None means no patch."""
    warnings: list[str] = field(default_factory=list)


def apply(request: Json, response: Json) -> Json:
    """The pod as the apiserver would store it after this response."""
    assert response["allowed"] is True, response
    if "patch" not in response:
        assert "patchType" not in response
        return copy.deepcopy(request["object"])
    assert response["patchType"] == "JSONPatch"
    ops = orjson.loads(base64.b64decode(response["patch"]))
    result: Json = jsonpatch.apply_patch(request["object"], ops)
    return result


def validate(pod: Json) -> None:
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(pod, version, strict=True)


def _as_patched(pod: Json) -> Json:
    return pod


async def check_case(
    webhook: AbstractAsyncContextManager[Reviewer],
    case: Case,
    stored: Callable[[Json], Json] = _as_patched,
) -> None:
    """Run `case` through `webhook` (started for the case, stopped after it): the patched pod is
    exactly the expected one, the warnings are the case's, the pod is valid, and a second pass
    over `stored(pod)` (the pod as the apiserver keeps it; by default as patched) adds no patch."""
    request = pods.request(case.pod)
    async with webhook as client:
        response = await client.review(request)
        result = apply(request, response)
        expected = copy.deepcopy(case.pod)
        if case.expect is None:
            assert "patch" not in response
        else:
            case.expect(expected)
        assert result == expected
        assert response.get("warnings", []) == case.warnings
        validate(result)
        again = await client.review(pods.request(stored(result), uid="second-pass"))
        assert "patch" not in again, "a second pass must not change anything"
