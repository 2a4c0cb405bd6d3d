"""The 1.20 variants of the manifests: only what 1.20 lacks changes."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from testbed.controlplane import render


def test_the_scheduler_configuration_is_v1beta1_with_the_extender_on_its_port() -> None:
    config = yaml.safe_load(render.scheduler_configuration(18888, Path("/k/sched.yaml")))
    original = yaml.safe_load(render.configmaps()["rdma-scheduler-config"]["data"]["config.yaml"])

    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1beta1"
    assert config["clientConnection"] == {"kubeconfig": "/k/sched.yaml"}
    assert [e["urlPrefix"] for e in config["extenders"]] == ["http://127.0.0.1:18888"]
    assert (config["healthzBindAddress"], config["metricsBindAddress"]) == ("", "")
    unchanged = {"apiVersion", "clientConnection", "extenders"}
    unchanged |= {"healthzBindAddress", "metricsBindAddress"}
    assert {k: v for k, v in config.items() if k not in unchanged} == {
        k: v for k, v in original.items() if k not in unchanged
    }
    urlless = [{k: v for k, v in e.items() if k != "urlPrefix"} for e in config["extenders"]]
    assert urlless == [
        {k: v for k, v in e.items() if k != "urlPrefix"} for e in original["extenders"]
    ]


def test_the_webhooks_call_the_url_trust_the_bundle_and_lose_only_match_conditions() -> None:
    (original,) = render.load("webhook/mutatingwebhookconfiguration.yaml")

    config = render.webhook_configuration("https://127.0.0.1:9443/mutate", b"PEM")

    assert [w["clientConfig"] for w in config["webhooks"]] == [
        {"url": "https://127.0.0.1:9443/mutate", "caBundle": base64.b64encode(b"PEM").decode()}
    ] * 2
    drop = {"clientConfig", "matchConditions"}
    assert [{k: v for k, v in w.items() if k not in drop} for w in config["webhooks"]] == [
        {k: v for k, v in w.items() if k not in drop} for w in original["webhooks"]
    ]


def test_namespaces_are_labelled_with_their_name() -> None:
    labelled = {
        ns["metadata"]["name"]: ns["metadata"]["labels"][render.NAME_LABEL]
        for ns in render.namespaces()
    }

    assert labelled == {
        "kube-rdma": "kube-rdma",
        "kube-rdma-agent": "kube-rdma-agent",
        "kube-rdma-plans": "kube-rdma-plans",
    }
    assert render.name_label_patch("kube-system") == {
        "metadata": {"labels": {"kubernetes.io/metadata.name": "kube-system"}}
    }
