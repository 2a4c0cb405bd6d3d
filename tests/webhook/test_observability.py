"""Health, readiness, metrics and the one log line per review."""

from __future__ import annotations

import json
import logging

import pytest

from kube_rdma.core.logs import JsonFormatter
from testbed.builders import pods
from tests.conftest import Serve
from webhook.app import Settings
from webhook.namespaces import Labels


async def test_health_and_metrics(serve: Serve) -> None:
    async with serve(Settings()) as client:
        assert await client.get("/healthz") == (200, "ok\n")
        assert await client.get("/readyz") == (200, "ok\n")
        pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
        await client.review(pods.request(pod))
        await client.review(pods.request(pods.mpijob_launcher("team-a")))
        await client.post(b"")
        status, text = await client.get("/metrics")
    assert status == 200
    lines = text.splitlines()
    assert 'kube_rdma_webhook_reviews_total{outcome="patched",profile="default"} 1.0' in lines
    assert 'kube_rdma_webhook_reviews_total{outcome="not-selected",profile=""} 1.0' in lines
    assert 'kube_rdma_webhook_bad_requests_total{code="400"} 1.0' in lines
    assert (
        'kube_rdma_webhook_review_duration_seconds_count{outcome="patched",profile="default"} 1.0'
        in lines
    )


class UnsyncedNamespaces:
    async def labels(self, name: str) -> Labels:
        return {}

    def ready(self) -> bool:
        return False


async def test_not_ready_until_the_namespace_cache_synced(serve: Serve) -> None:
    async with serve(Settings(), UnsyncedNamespaces()) as client:
        assert await client.get("/readyz") == (503, "namespace cache not synced yet\n")
        assert await client.get("/healthz") == (200, "ok\n")


async def test_one_structured_log_line_per_review(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/profile": "missing"})
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "llama-70b-worker-"
    request = {**pods.request(pod), "name": ""}
    with caplog.at_level(logging.INFO, logger="kube_rdma.webhook"):
        async with serve(Settings()) as client:
            await client.review(request)
            records = [r for r in caplog.records if r.name == "kube_rdma.webhook"]
    assert len(records) == 1
    record = records[0]
    assert record.getMessage() == "review"
    fields = {
        k: getattr(record, k) for k in ("uid", "pod", "outcome", "profile", "warnings", "reason")
    }
    assert fields == {
        "uid": "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77",
        "pod": "team-a/llama-70b-worker-*",
        "outcome": "denied",
        "profile": "",
        "warnings": 0,
        "reason": "RDMA profile 'missing' (annotation kube-rdma.io/profile) does not exist; "
        "valid profiles: default",
    }
    line = json.loads(JsonFormatter().format(record))
    assert {k: line[k] for k in ("level", "logger", "msg", "uid", "outcome")} == {
        "level": "info",
        "logger": "kube_rdma.webhook",
        "msg": "review",
        "uid": "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77",
        "outcome": "denied",
    }
