"""manifests/monitoring: the opt-in ServiceMonitor and PrometheusRule, checked against the
webhook's Service and the metrics the code exports.

kubernetes-validate has no schema for the Prometheus operator's resources, so both are pinned
here. The ServiceMonitor scrapes the webhook's Service over HTTPS, verifying the serving
certificate's name against the CA in the webhook's TLS Secret. The rule builds with kustomize,
every expression names only metrics that the webhook, the
extender and the certificate watcher register at runtime (with the suffixes Prometheus sees:
counters' `_total`, histograms' `_bucket`, `_sum` and `_count`), and every alert says how bad it
is and what it means. No other kustomization pulls it in, so clusters without the operator's
CRDs still apply the rest.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from certs.generate import service_dns_names
from certs.watch import watch_certificate
from extender.app import EXTENDER, Settings, create_app
from extender.app import Metrics as ExtenderMetrics
from extender.cluster.snapshot import SnapshotSource
from extender.contention_metrics import ContentionCollector
from kube_rdma.core.objects import Json
from testbed.kustomize import built, needs_kubectl
from tests.manifests.test_manifests import NAMESPACE, SERVICE, TLS_SECRET, find
from webhook.metrics import Metrics as WebhookMetrics

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
MONITORING = MANIFESTS / "monitoring"
SEVERITIES = ("info", "warning", "critical")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
PROMQL_WORDS = {"sum", "rate", "increase", "histogram_quantile", "absent", "by"}


def exported_metrics() -> set[str]:
    """Every series name the code's registries can produce."""
    registries = [WebhookMetrics().registry, ExtenderMetrics().registry, CollectorRegistry()]
    scheduler = create_app(Settings(), SnapshotSource([]))[EXTENDER].scheduler
    registries[-1].register(ContentionCollector(scheduler, lambda: 0.0))
    tls = SimpleNamespace(not_after=None, on_result=None)
    watch_certificate(web.Application(), tls, registries[-1])  # type: ignore[arg-type]
    return {
        family.name + suffix
        for registry in registries
        for family in registry.collect()
        for suffix in SUFFIXES[family.type]
    }


def rules() -> list[Json]:
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def names_in(expr: str) -> set[str]:
    """The identifiers of a PromQL expression outside label matchers, ranges and `by (...)`."""
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\bby\s*\([^)]*\)", " ", expr)
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare)) - PROMQL_WORDS


@needs_kubectl
def test_builds_to_a_service_monitor_and_a_prometheus_rule() -> None:
    documents = built("monitoring")
    assert [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("monitoring.coreos.com/v1", "PrometheusRule", "kube-rdma"),
        ("monitoring.coreos.com/v1", "ServiceMonitor", "kube-rdma-webhook"),
    ]


def service_monitor() -> Json:
    monitor: Json = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    return monitor


def test_service_monitor_scrapes_the_webhook_service_over_verified_tls() -> None:
    service = find("Service", SERVICE)
    monitor = service_monitor()
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"] == NAMESPACE
    spec = monitor["spec"]
    assert spec["selector"] == {"matchLabels": service["metadata"]["labels"]}
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    [endpoint] = spec["endpoints"]
    assert endpoint["port"] in [p["name"] for p in service["spec"]["ports"]]
    assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
    assert endpoint["tlsConfig"] == {
        "serverName": f"{SERVICE}.{NAMESPACE}.svc",
        "ca": {"secret": {"name": TLS_SECRET, "key": "ca.crt"}},
    }
    assert f"{SERVICE}.{NAMESPACE}.svc" in service_dns_names(SERVICE, NAMESPACE)


def test_the_registries_export_what_the_docs_list() -> None:
    assert exported_metrics() == {
        "kube_rdma_webhook_reviews_total",
        "kube_rdma_webhook_review_duration_seconds_bucket",
        "kube_rdma_webhook_review_duration_seconds_sum",
        "kube_rdma_webhook_review_duration_seconds_count",
        "kube_rdma_webhook_bad_requests_total",
        "kube_rdma_profile_reloads_total",
        "kube_rdma_profile_warnings",
        "kube_rdma_extender_calls_total",
        "kube_rdma_extender_call_duration_seconds_bucket",
        "kube_rdma_extender_call_duration_seconds_sum",
        "kube_rdma_extender_call_duration_seconds_count",
        "kube_rdma_weights_reloads_total",
        "kube_rdma_gangs_waiting",
        "kube_rdma_gang_longest_wait_seconds",
        "kube_rdma_gang_members_at_barrier",
        "kube_rdma_gang_holds",
        "kube_rdma_gang_held_gpus",
        "kube_rdma_gang_preemptions_total",
        "kube_rdma_gang_evictions_total",
        "kube_rdma_eviction_refusals_total",
        "kube_rdma_eviction_budget_remaining",
        "kube_rdma_gang_nominations_total",
        "kube_rdma_tls_reloads_total",
        "kube_rdma_tls_certificate_expiry_seconds",
    }


@pytest.mark.parametrize("rule", rules(), ids=[r["alert"] for r in rules()])
def test_each_rule_names_only_exported_metrics(rule: Json) -> None:
    names = names_in(rule["expr"])
    assert names, "an expression without a metric"
    assert names <= exported_metrics()


@pytest.mark.parametrize("rule", rules(), ids=[r["alert"] for r in rules()])
def test_each_rule_says_how_bad_and_what_it_means(rule: Json) -> None:
    assert rule["alert"].startswith("KubeRdma")
    assert rule["labels"]["severity"] in SEVERITIES
    assert set(rule["annotations"]) == {"summary", "description"}
    assert all(text.strip() for text in rule["annotations"].values())


def test_names_in_skips_matchers_ranges_and_grouping() -> None:
    expr = 'histogram_quantile(0.99, sum by (verb, le) (rate(a_bucket{x="y"}[5m]))) > b * 2'
    assert names_in(expr) == {"a_bucket", "b"}


def test_every_alert_is_in_the_operations_guide() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text()
    assert [r["alert"] for r in rules() if f"`{r['alert']}`" not in guide] == []


def test_no_other_kustomization_pulls_it_in() -> None:
    others = [p for p in MANIFESTS.rglob("kustomization.yaml") if p.parent != MONITORING]
    assert others
    pulling = [
        p
        for p in others
        for entry in yaml.safe_load(p.read_text()).get("resources", [])
        if (p.parent / entry).resolve() == MONITORING
    ]
    assert pulling == []
