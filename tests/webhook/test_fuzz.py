"""The webhook over HTTP under generated input: whatever the body, never an exception and never a
5xx; a well-formed AdmissionReview echoing the request's uid; every patch applies; and for valid
pods the patched pod is one the apiserver accepts.

Examples per property: `KUBE_RDMA_FUZZ_EXAMPLES` (testbed/builders/pod_strategies.py)."""

from __future__ import annotations

import base64
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import jsonpatch
import kubernetes_validate
import orjson
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.builders.pod_strategies import JSON_VALUES, examples, mutated, valid_pods
from webhook.app import Settings, create_app

K8S_VERSION = "1.33.0"
FUZZ = settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Webhook:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def post(self, body: bytes) -> tuple[int, Any]:
        async with self.session.post(self.url, data=body) as response:
            return response.status, orjson.loads(await response.read())


@pytest.fixture
async def webhook(settings: Settings) -> AsyncIterator[Webhook]:
    runner = web.AppRunner(create_app(settings), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/mutate"
    try:
        async with aiohttp.ClientSession() as session:
            yield Webhook(session, url)
    finally:
        await runner.cleanup()


def review(request: Any) -> Json:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def checked(sent: Any, status: int, body: Any) -> Json | None:
    """The review's `response` after checking the answer's shape; None for an HTTP 4xx."""
    if status != 200:
        assert status in (400, 413), (status, body)
        assert isinstance(body["error"], str)
        assert body["error"]
        return None
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    response: Json = body["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    status_field = response.get("status") or {}
    assert status_field.get("code") != 500, status_field  # no internal error, whatever the pod
    return response


def patched(request: Json, response: Json) -> Json:
    if "patch" not in response:
        return request["object"]  # type: ignore[no-any-return]
    assert response["patchType"] == "JSONPatch"
    ops = orjson.loads(base64.b64decode(response["patch"]))
    result: Json = jsonpatch.apply_patch(request["object"], ops)
    return result


def outcome(response: Json) -> str:
    if not response["allowed"]:
        return "denied"
    return "patched" if "patch" in response else "unchanged"


MIN_PATCHED_SHARE = 0.3
"""Of the generated valid pods, at least this share must come out patched (46 % with a fixed
seed; runs vary, 40 % was seen): a generator that drifted away from opted-in pods (11 % did,
once) would test the patch path by name only."""


@pytest.fixture
def outcomes() -> Iterator[Counter[str]]:
    """What each example came to; checked once every example has run."""
    seen: Counter[str] = Counter()
    yield seen
    total = sum(seen.values())
    if total >= 100:  # fewer examples (KUBE_RDMA_FUZZ_EXAMPLES) say little about a share
        assert seen["patched"] / total >= MIN_PATCHED_SHARE, dict(seen)


@FUZZ
@given(pod=valid_pods())
async def test_valid_pods_come_out_valid(
    webhook: Webhook, outcomes: Counter[str], pod: Json
) -> None:
    sent = review(pods.request(pod))
    response = checked(sent, *await webhook.post(orjson.dumps(sent)))
    assert response is not None
    outcomes[outcome(response)] += 1
    if response["allowed"]:
        kubernetes_validate.validate(patched(sent["request"], response), K8S_VERSION, strict=True)
    else:
        assert response["status"]["code"] == 403
        assert response["status"]["message"]


@FUZZ
@given(data=st.data())
async def test_mangled_reviews_never_fail_the_webhook(
    webhook: Webhook, data: st.DataObject, caplog: pytest.LogCaptureFixture
) -> None:
    sent = data.draw(mutated(review(pods.request(data.draw(valid_pods())))))
    status, body = await webhook.post(json.dumps(sent).encode())  # integers past 64 bits too
    response = checked(sent, status, body)
    if response is not None and "patch" in response:
        patched(sent["request"], response)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    caplog.clear()


@FUZZ
@given(body=JSON_VALUES.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=64))
async def test_arbitrary_bodies_are_answered_400(webhook: Webhook, body: bytes) -> None:
    status, answer = await webhook.post(body)
    assert status == 400, answer
    assert isinstance(answer["error"], str)
