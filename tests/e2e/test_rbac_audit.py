"""What each kube-rdma component did, and was refused, under its manifests' RBAC.

Read from the apiserver's audit log after every other e2e test ran (conftest orders this module
last), so that it covers the whole session: a missing permission shows up as a refusal, an
unneeded one as a rule no call used.
"""

from __future__ import annotations

import pytest

from testbed.controlplane.audit import activity
from testbed.controlplane.components import (
    AGENT_ACCOUNT,
    SCHEDULER_ACCOUNT,
    WEBHOOK_ACCOUNT,
    Stack,
    user,
)

EXPECTED = {
    "webhook": set[str](),
    "extender": set[str](),
    "kube-scheduler": set[str](),
    "agent": {"get nodes in *", "patch nodes in *"},
}
COMPONENTS = {
    "webhook": (WEBHOOK_ACCOUNT, ""),
    "extender": (SCHEDULER_ACCOUNT, "OpenAPI-Generator"),
    "kube-scheduler": (SCHEDULER_ACCOUNT, "kube-scheduler"),
    "agent": (AGENT_ACCOUNT, ""),
}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_each_component_is_refused_nothing(stack: Stack, component: str) -> None:
    account, agent = COMPONENTS[component]

    seen = activity(stack.plane.audit_log, user(account), agent)

    assert seen.refused == set(), f"{component} did {sorted(seen.did)}"
    assert seen.did >= EXPECTED[component] or not EXPECTED[component], sorted(seen.did)
    print(f"{component} did: {sorted(seen.did)}")
