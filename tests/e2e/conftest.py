"""One real control plane for the whole e2e session, with kube-rdma running beside it.

Every test gets a namespace of its own (labelled as 1.21+ would label it); its pods are
deleted with grace 0 afterwards, since no kubelet confirms a deletion. The Nodes are API objects
only (testbed/controlplane/objects.py).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.controlplane.components import Stack
from testbed.controlplane.objects import create_namespace, delete_pods
from testbed.controlplane.rest import Rest
from testbed.controlplane.session import running

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


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The control plane and kube-rdma, in a temporary folder or in $KUBE_RDMA_E2E_DIR (kept
    afterwards, with every process's log under logs/ and the apiserver's audit.log)."""
    kept = os.environ.get("KUBE_RDMA_E2E_DIR")
    with running(Path(kept) if kept else None) as started:
        yield started


@pytest.fixture
def api(stack: Stack) -> Rest:
    return stack.plane.admin


@pytest.fixture
def namespace(stack: Stack, api: Rest) -> Iterator[str]:
    name = f"e2e-{secrets.token_hex(3)}"
    create_namespace(stack, name, {})
    yield name
    delete_pods(api, name)
