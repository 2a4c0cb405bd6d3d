"""One real control plane for the whole e2e session, with kube-rdma running beside it.

Every test gets a namespace of its own (labelled as 1.21+ would label it); its pods are
deleted with grace 0 afterwards, since no kubelet confirms a deletion. The Nodes are API objects
only: 16 HGX-like 8-GPU nodes in 4 leaves of 4, two leaves per spine.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders.nodes import hgx, node
from testbed.controlplane import crds
from testbed.controlplane.apply import apply_all
from testbed.controlplane.binaries import ensure_binaries
from testbed.controlplane.cluster import ControlPlane
from testbed.controlplane.components import Stack
from testbed.controlplane.render import with_name_label
from testbed.controlplane.rest import MERGE, Rest

LEAVES, PER_LEAF = 4, 4
LAST = ("test_rbac_audit.py",)
TIMINGS = pytest.StashKey[dict[str, float]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here carries the e2e marker (`make test` deselects them, `make e2e` runs
    them); the audit of everything the components did runs after all the others."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: item.path.is_relative_to(here) and item.path.name in LAST)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The timings the tests measured, labelled with the control plane they ran on."""
    measured = terminalreporter.config.stash.get(TIMINGS, {})
    if measured:
        terminalreporter.section("timings, 1.20 control plane")
        for what, seconds in measured.items():
            terminalreporter.write_line(f"{seconds:7.2f} s  {what}")


@pytest.fixture
def timings(request: pytest.FixtureRequest) -> dict[str, float]:
    """Where a test records how long something took (printed after the run)."""
    return request.config.stash.setdefault(TIMINGS, {})


def node_name(leaf: int, index: int) -> str:
    return f"gpu-l{leaf}-{index}"


def cluster_nodes() -> list[Json]:
    result = []
    for leaf in range(LEAVES):
        for index in range(PER_LEAF):
            labels = {keys.LEAF: f"leaf-{leaf}", keys.SPINE: f"spine-{leaf // 2}"}
            obj = node(node_name(leaf, index), hgx(), labels=labels)
            obj["metadata"]["labels"]["kubernetes.io/hostname"] = obj["metadata"]["name"]
            result.append(obj)
    return result


def add_nodes(api: Rest, nodes: list[Json]) -> None:
    """Create each Node, then write its status as a kubelet would (create drops it), and take
    off the not-ready taint that the TaintNodesByCondition admission plugin puts on a new Node,
    as the node lifecycle controller does once the Node reports Ready."""
    for obj in nodes:
        status = obj.pop("status")
        apply_all(api, [obj])
        path = f"/api/v1/nodes/{obj['metadata']['name']}"
        status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
        api.patch(f"{path}/status", {"status": status}, MERGE)
        api.patch(path, {"spec": {"taints": None}}, MERGE)


@pytest.fixture(scope="session")
def plane() -> Iterator[ControlPlane]:
    """The control plane in a temporary folder, or in $KUBE_RDMA_E2E_DIR (kept afterwards, with
    every process's log under logs/ and the apiserver's audit.log), which must be empty."""
    binaries = ensure_binaries()
    kept = os.environ.get("KUBE_RDMA_E2E_DIR")
    with contextlib.ExitStack() as cleanup:
        if kept:
            folder = Path(kept)
            folder.mkdir(parents=True, exist_ok=True)
            assert not any(folder.iterdir()), f"KUBE_RDMA_E2E_DIR={kept} is not empty"
        else:
            folder = Path(
                cleanup.enter_context(tempfile.TemporaryDirectory(prefix="kube-rdma-e2e-"))
            )
        control = ControlPlane(binaries, folder).start()
        cleanup.callback(control.stop)
        yield control


@pytest.fixture(scope="session")
def stack(plane: ControlPlane) -> Iterator[Stack]:
    add_nodes(plane.admin, cluster_nodes())
    crds.install(plane.admin)
    running = Stack(plane).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def api(stack: Stack) -> Rest:
    return stack.plane.admin


@pytest.fixture
def namespace(stack: Stack, api: Rest) -> Iterator[str]:
    name = f"e2e-{secrets.token_hex(3)}"
    create_namespace(stack, name, {})
    yield name
    delete_pods(api, name)


def create_namespace(stack: Stack, name: str, labels: dict[str, str]) -> None:
    """A namespace whose default ServiceAccount is ready for pods (its token Secret made)."""
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    apply_all(stack.plane.admin, [with_name_label(obj)])
    stack.plane.service_account_token(name, "default")


def delete_pods(api: Rest, namespace: str) -> None:
    """Delete every pod at once, as `kubectl delete --grace-period=0 --force` does."""
    for pod in api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
        path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"
        api.call("DELETE", path, {"gracePeriodSeconds": 0})
    deadline = time.monotonic() + 30
    while api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
        assert time.monotonic() < deadline, f"pods of {namespace} not deleted"
        time.sleep(0.1)
