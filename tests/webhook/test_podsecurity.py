"""Pod Security levels: reading the namespace's level, what each level forbids of what a
profile adds, and the resolver init container fitting `restricted`."""

from __future__ import annotations

import base64
from pathlib import Path

import jsonpatch
import orjson
import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from webhook.admission import Admitter
from webhook.namespaces import StaticNamespaces
from webhook.podsecurity import ENFORCE_LABEL, Item, Level, enforced_level, forbidden
from webhook.profile_store import ProfileStore

ALL = {Item.IPC_LOCK, Item.HOST_PATH, Item.HOST_NETWORK}


@pytest.mark.parametrize(
    ("labels", "level", "warning"),
    [
        ({}, Level.PRIVILEGED, None),
        ({"pod-security.kubernetes.io/enforce": "privileged"}, Level.PRIVILEGED, None),
        ({"pod-security.kubernetes.io/enforce": "baseline"}, Level.BASELINE, None),
        ({"pod-security.kubernetes.io/enforce": "restricted"}, Level.RESTRICTED, None),
        ({"pod-security.kubernetes.io/warn": "restricted"}, Level.PRIVILEGED, None),
        (
            {"pod-security.kubernetes.io/enforce": "Baseline"},
            Level.RESTRICTED,
            "pod-security.kubernetes.io/enforce='Baseline' is not a Pod Security level; it is "
            "enforced as restricted",
        ),
    ],
)
def test_enforced_level(labels: dict[str, str], level: Level, warning: str | None) -> None:
    assert enforced_level(labels) == (level, warning)


@pytest.mark.parametrize(
    ("level", "wanted", "expected"),
    [
        (Level.PRIVILEGED, ALL, []),
        (Level.BASELINE, ALL, [Item.IPC_LOCK, Item.HOST_PATH, Item.HOST_NETWORK]),
        (Level.RESTRICTED, {Item.HOST_NETWORK}, [Item.HOST_NETWORK]),
        (Level.BASELINE, set(), []),
    ],
)
def test_forbidden(level: Level, wanted: set[Item], expected: list[Item]) -> None:
    assert forbidden(level, wanted) == expected


def test_unlabelled_namespace_takes_the_cluster_default() -> None:
    assert enforced_level({}, Level.BASELINE) == (Level.BASELINE, None)


def restricted_violations(container: Json) -> list[str]:
    """The Pod Security `restricted` checks that concern one container's own securityContext
    (pod-security-admission policy: allowPrivilegeEscalation, capabilities, runAsNonRoot,
    seccompProfile), where the pod's securityContext sets none of them."""
    sc = container.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    problems = []
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation")
    if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
        problems.append("capabilities")
    if sc.get("runAsNonRoot") is not True or sc.get("runAsUser") == 0:
        problems.append("runAsNonRoot")
    if (sc.get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
        problems.append("seccompProfile")
    if sc.get("privileged"):
        problems.append("privileged")
    return problems


async def test_resolver_fits_a_restricted_namespace(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "profiles:\n  default:\n    devices: plugin\n    ipcLock: false\n    gid: {strategy: pod}\n"
    )
    namespaces = StaticNamespaces({"strict": {ENFORCE_LABEL: "restricted"}})
    review = Admitter(ProfileStore(path), namespaces, "kube-rdma")
    request = pods.request(pods.pytorchjob("worker", 0, "strict", {"kube-rdma.io/inject": "true"}))
    decision = await review.review(request)
    assert decision.outcome == "patched"
    assert "warnings" not in decision.response["response"]
    ops = orjson.loads(base64.b64decode(decision.response["response"]["patch"]))
    pod = jsonpatch.apply_patch(request["object"], ops)
    (resolver,) = pod["spec"]["initContainers"]
    assert resolver["name"] == "kube-rdma-nccl-conf"
    assert restricted_violations(resolver) == []
    assert [v for v in pod["spec"]["volumes"] if "hostPath" in v] == []
