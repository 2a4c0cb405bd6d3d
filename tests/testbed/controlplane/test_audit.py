"""Reading the apiserver's audit log: what a user did and was refused."""

from __future__ import annotations

import json
from pathlib import Path

from kube_rdma.core.objects import Json
from testbed.controlplane.audit import activity, writes

WEBHOOK = "system:serviceaccount:kube-rdma:kube-rdma-webhook"
EXTENDER = "system:serviceaccount:kube-rdma:rdma-scheduler"
MWC_REF = {"resource": "mutatingwebhookconfigurations", "apiGroup": "admissionregistration.k8s.io"}


def event(user: str, verb: str, ref: Json | None, code: int, agent: str = "x/1") -> Json:
    found: Json = {
        "stage": "ResponseComplete",
        "user": {"username": user},
        "verb": verb,
        "userAgent": agent,
        "responseStatus": {"code": code},
    }
    if ref is not None:
        found["objectRef"] = ref
    return found


def write_log(path: Path, events: list[Json]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_activity_splits_done_from_refused_and_counts_a_watch_still_open(
    tmp_path: Path,
) -> None:
    log = write_log(
        tmp_path / "audit.log",
        [
            event(WEBHOOK, "list", {"resource": "namespaces"}, 200),
            {
                **event(WEBHOOK, "watch", {"resource": "namespaces"}, 200),
                "stage": "ResponseStarted",
            },
            event(WEBHOOK, "delete", {"resource": "secrets", "namespace": "kube-rdma"}, 403),
            {**event(WEBHOOK, "get", {"resource": "nodes"}, 200), "stage": "ResponseStarted"},
            event(WEBHOOK, "get", None, 200),
            event(EXTENDER, "list", {"resource": "pods"}, 200),
            event(
                EXTENDER,
                "create",
                {"resource": "pods", "subresource": "binding", "namespace": "team-a"},
                201,
                "kube-scheduler/v1.20.2",
            ),
            event(EXTENDER, "patch", MWC_REF, 403, "kube-scheduler/v1.20.2"),
        ],
    )

    webhook = activity(log, WEBHOOK)
    scheduler = activity(log, EXTENDER, "kube-scheduler")

    assert webhook.did == {"list namespaces in *", "watch namespaces in *"}
    assert webhook.refused == {"delete secrets in kube-rdma"}
    assert scheduler.did == {"create pods/binding in team-a"}
    assert scheduler.refused == {
        "patch mutatingwebhookconfigurations.admissionregistration.k8s.io in *"
    }


def test_writes_lists_successful_creates_and_deletes_in_order(tmp_path: Path) -> None:
    cm = {"resource": "configmaps", "namespace": "kube-rdma"}
    log = write_log(
        tmp_path / "audit.log",
        [
            event(EXTENDER, "create", {**cm, "name": "gang-a"}, 201),
            event(EXTENDER, "update", {**cm, "name": "gang-a"}, 200),
            event(EXTENDER, "create", {**cm, "name": "gang-b"}, 409),
            event(EXTENDER, "delete", {**cm, "name": "gang-a"}, 200),
            event(WEBHOOK, "delete", {**cm, "name": "gang-b"}, 200),
            event(EXTENDER, "delete", {**cm, "namespace": "other", "name": "gang-c"}, 200),
        ],
    )

    assert writes(log, EXTENDER, "configmaps", "kube-rdma") == [
        ("create", "gang-a"),
        ("delete", "gang-a"),
    ]
