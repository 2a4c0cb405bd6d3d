"""Both servers over HTTP, fed bodies generated from their schemas and broken off them, with the
fake apiserver under them: every answer is a 2xx or 4xx with a JSON body, nothing is logged at
ERROR, and no input makes either write to the apiserver what it should not (no eviction, no
binding, no patch, no update, no delete).

The extender runs on the live source (list + watch of the fake apiserver's Nodes and Pods) with
its gang plans in ConfigMaps and its evictions through the API, as `kube-rdma extender
--kubeconfig` does; the webhook watches the fake apiserver's Namespaces. The Pods are the
Kubernetes OpenAPI's, some steered (a name, an opt-in, GPUs) so that they get past the first
checks. Examples per property: `KUBE_RDMA_FUZZ_EXAMPLES` (default below), derandomized.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from extender.app import Settings as ExtenderSettings
from extender.app import create_app as extender_app
from extender.book.configmaps import ConfigMapRecords
from extender.cluster.disruptions import LiveDisruptions
from extender.cluster.live import LiveSource
from kube_rdma.core import keys
from testbed import net, schemas
from testbed.builders.schema_strategies import (
    from_schema,
    fuzz_settings,
    mutated_off,
    overlaid_pods,
)
from testbed.fakeapi import FakeApiServer, eventually
from testbed.fakeapi.recording import RecordedRequest
from tests.extender.test_app import NAMES, NODES, PODS
from webhook.app import Settings as WebhookSettings
from webhook.app import create_app as webhook_app

FUZZ = fuzz_settings(60)
POD = schemas.kubernetes_schema(schemas.POD)
NAMESPACES = ("team-a", "ml-training", "kube-system", "default")


def side_effects(requests: list[RecordedRequest]) -> list[tuple[str, str]]:
    """The writes no fuzzed input may cause: evictions, bindings, and any patch, update or
    delete. (A gang plan's ConfigMap create is the extender's bookkeeping, not a change to the
    cluster.)"""
    return [
        (r.method, r.path)
        for r in requests
        if r.method in ("PATCH", "PUT", "DELETE")
        or (r.method == "POST" and r.path.endswith(("/binding", "/eviction")))
    ]


@st.composite
def steered_pods(draw: st.DrawFn) -> Any:
    """A generated Pod, half of them given a name, a namespace, the opt-in and GPUs on their
    first container, where the generated one has room for them."""
    pod = draw(from_schema(POD))
    if not isinstance(pod, dict) or not draw(st.booleans()):
        return pod
    metadata = pod["metadata"] if isinstance(pod.get("metadata"), dict) else {}
    annotations = metadata["annotations"] if isinstance(metadata.get("annotations"), dict) else {}
    pod["metadata"] = {
        **metadata,
        "name": draw(st.sampled_from(["worker-0", "fuzz-0"])),
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "annotations": {**annotations, keys.INJECT: "true"},
    }
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if isinstance(containers, list) and containers and isinstance(containers[0], dict):
        limits = {"nvidia.com/gpu": draw(st.sampled_from(["8", "1"]))}
        containers[0]["resources"] = {"limits": limits, "requests": limits}
    return pod


def pods() -> st.SearchStrategy[Any]:
    """Generated Pods: as the schema gives them, steered, or laid over a valid pod."""
    return from_schema(POD) | steered_pods() | overlaid_pods(POD) | overlaid_pods(POD)


def _maybe_broken(document: Any) -> Any:
    return st.just(document) | mutated_off(document)


@st.composite
def extender_bodies(draw: st.DrawFn, verb: str) -> Any:
    if verb == "bind":
        return draw(
            _maybe_broken(draw(from_schema(schemas.component("extender", "ExtenderBindingArgs"))))
        )
    if verb == "preempt":
        args = draw(from_schema(schemas.component("extender", "ExtenderPreemptionArgs")))
    else:
        args = draw(from_schema(schemas.component("extender", "ExtenderArgs")))
    if isinstance(args, dict) and draw(st.integers(0, 3)):
        args["Pod"] = draw(pods())
        if verb != "preempt":
            args["NodeNames"] = draw(st.lists(st.sampled_from(NAMES), unique=True))
    return draw(_maybe_broken(args))


@st.composite
def reviews(draw: st.DrawFn) -> Any:
    review = draw(from_schema(schemas.admission_review_schema()))
    if draw(st.integers(0, 3)):
        pod = draw(pods())
        review["request"].update(
            object=pod,
            operation="CREATE",
            kind={"group": "", "version": "v1", "kind": "Pod"},
            resource={"group": "", "version": "v1", "resource": "pods"},
            namespace=(pod.get("metadata") or {}).get("namespace")
            if isinstance(pod, dict)
            else None,
        )
    return draw(_maybe_broken(review))


@dataclass
class Served:
    api: FakeApiServer
    session: aiohttp.ClientSession
    base: str

    async def post(self, path: str, body: Any) -> tuple[int, str, str]:
        data = json.dumps(body).encode()  # integers past 64 bits too
        async with self.session.post(self.base + path, data=data) as response:
            return response.status, response.content_type, await response.text()


def answered(status: int, content_type: str, text: str) -> Any:
    assert 200 <= status < 500, (status, text)
    assert content_type == "application/json", (status, content_type, text)
    return json.loads(text)


def no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    caplog.clear()
    assert errors == [], [r.getMessage() for r in errors]


@pytest.fixture
async def extender(fake_api: FakeApiServer, core_v1: Any) -> AsyncIterator[Served]:
    for node in NODES:
        fake_api.create("nodes", node)
    for pod in PODS:
        fake_api.create("pods", pod)
    source = LiveSource(core_v1)
    records = ConfigMapRecords(core_v1, "kube-rdma", "extender-fuzz")
    app = extender_app(ExtenderSettings(), source, None, records, LiveDisruptions(core_v1))
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        await eventually(source.ready)
        yield Served(fake_api, session, base)


@pytest.fixture
async def webhook(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Served]:
    for name in NAMESPACES:
        fake_api.create(
            "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    settings = WebhookSettings(kubeconfig=fake_api.write_kubeconfig(tmp_path / "kubeconfig"))
    async with net.serving(webhook_app(settings)) as base, aiohttp.ClientSession() as session:

        async def ready() -> bool:
            async with session.get(base + "/readyz") as response:
                return response.status == 200

        await eventually(ready)
        yield Served(fake_api, session, base)


@FUZZ
@given(data=st.data(), verb=st.sampled_from(["filter", "prioritize", "preempt", "bind"]))
async def test_the_extender_answers_generated_bodies_without_side_effects(
    extender: Served, caplog: pytest.LogCaptureFixture, data: st.DataObject, verb: str
) -> None:
    body = data.draw(extender_bodies(verb))
    status, content_type, text = await extender.post(f"/{verb}", body)
    event(f"/{verb} {status}")  # pytest --hypothesis-show-statistics: how deep inputs got
    answer = answered(status, content_type, text)
    if verb == "bind" and answer == {"Error": ""}:
        return  # a generated binding that names a pod and node of the cluster
    no_errors_logged(caplog)
    assert side_effects(extender.api.requests) == []


@FUZZ
@given(review=reviews())
async def test_the_webhook_answers_generated_reviews_without_side_effects(
    webhook: Served, caplog: pytest.LogCaptureFixture, review: Any
) -> None:
    status, content_type, text = await webhook.post("/mutate", review)
    answer = answered(status, content_type, text)
    outcome = answer["response"].get("status", {}).get("code") if "response" in answer else None
    event(f"/mutate {status} {outcome or 'allowed'}")
    if "response" in answer:
        assert (answer["response"].get("status") or {}).get("code") != 500, answer
    no_errors_logged(caplog)
    assert [r for r in webhook.api.requests if r.method != "GET"] == []
