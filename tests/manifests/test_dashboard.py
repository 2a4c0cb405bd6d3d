"""manifests/monitoring/grafana-dashboard.json: a dashboard Grafana imports as it is, whose
every query names only metrics the code exports (the registries' names at runtime, with the
suffixes Prometheus sees), reading from whichever Prometheus the importer picks. It is not a
resource of any kustomization: a ConfigMap generator or a Grafana import takes it from there."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kube_rdma.core.objects import Json
from tests.manifests.test_monitoring import PROMQL_WORDS, exported_metrics, names_in

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "manifests" / "monitoring" / "grafana-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_TYPES = {"row", "timeseries", "stat"}
AGGREGATIONS = {"min", "max", "avg"}


def dashboard() -> Json:
    loaded: Json = json.loads(DASHBOARD.read_text())
    return loaded


def queries() -> list[tuple[str, str]]:
    """(panel title, expr) of every target."""
    return [
        (panel["title"], target["expr"])
        for panel in dashboard()["panels"]
        for target in panel.get("targets", [])
    ]


def test_is_a_dashboard_with_a_datasource_variable() -> None:
    board = dashboard()
    assert (board["uid"], board["title"], board["schemaVersion"]) == ("kube-rdma", "kube-rdma", 39)
    assert [(v["name"], v["type"], v["query"]) for v in board["templating"]["list"]] == [
        ("datasource", "datasource", "prometheus")
    ]


def test_every_panel_is_placed_and_queries_the_chosen_datasource() -> None:
    panels = dashboard()["panels"]
    assert {p["type"] for p in panels} <= PANEL_TYPES
    assert len({p["id"] for p in panels}) == len(panels)
    assert all(set(p["gridPos"]) == {"h", "w", "x", "y"} for p in panels)
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)
    for panel in (p for p in panels if p["type"] != "row"):
        targets = panel["targets"]
        assert (len(targets) > 0, panel["datasource"]) == (True, DATASOURCE), panel["title"]
        assert [t["refId"] for t in targets] == [chr(65 + i) for i in range(len(targets))]
        assert all(t["datasource"] == DATASOURCE and t["expr"].strip() for t in targets)
        assert panel["description"], panel["title"]


def test_the_panels_cover_the_webhook_the_extender_and_the_certificates() -> None:
    rows = [p["title"] for p in dashboard()["panels"] if p["type"] == "row"]
    assert rows == ["Admission webhook", "Scheduler extender", "Configuration and certificates"]


def test_every_query_names_only_exported_metrics() -> None:
    exported = exported_metrics()
    unknown = {
        (title, name)
        for title, expr in queries()
        for name in names_in(expr) - AGGREGATIONS - PROMQL_WORDS
        if name not in exported
    }
    assert unknown == set()


def family(series: str) -> str:
    """The metric a series belongs to: its name without the suffix Prometheus adds."""
    for suffix in ("_total", "_bucket", "_sum", "_count"):
        if series.endswith(suffix):
            return series.removesuffix(suffix)
    return series


def test_every_exported_metric_has_a_panel() -> None:
    shown = {family(name) for _, expr in queries() for name in names_in(expr)}
    assert {family(series) for series in exported_metrics()} - shown == set()


def test_no_kustomization_lists_it_as_a_resource() -> None:
    for kustomization in (ROOT / "manifests").rglob("kustomization.yaml"):
        resources = yaml.safe_load(kustomization.read_text()).get("resources") or []
        assert not any(str(r).endswith("grafana-dashboard.json") for r in resources), kustomization
