"""What each kube-rdma component did, and was refused, under its manifests' RBAC.

Read from the apiserver's audit log after every other e2e test ran (conftest orders this module
last), so that it covers the whole session: a missing permission shows up as a refusal, a call
nobody expected as a difference from the lists below. kube-scheduler is held only to being
refused nothing: what it calls is kube-scheduler's business, under the rdma-scheduler role the
manifests bind it to (system:kube-scheduler's rules without the default scheduler's Lease).
"""

from __future__ import annotations

import re

import pytest

from testbed.controlplane.audit import activity
from testbed.controlplane.components import (
    AGENT_ACCOUNT,
    SCHEDULER_ACCOUNT,
    WEBHOOK_ACCOUNT,
    Stack,
    user,
)

MWC = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
CACHED = ("nodes", "pods", "jobs.batch", "pytorchjobs.kubeflow.org", "jobsets.jobset.x-k8s.io")
PLAN_RECORD_VERBS = ("list", "watch", "create", "update", "delete")
DID: dict[str, set[str] | None] = {
    # Namespaces for their labels; with --self-provision, its Secret and the caBundle.
    "webhook": {
        "list namespaces in *",
        "watch namespaces in *",
        "get secrets in kube-rdma",
        "create secrets in kube-rdma",
        f"get {MWC} in *",
        f"patch {MWC} in *",
    },
    # The cluster cache, the owners gangs are read from, bindings, and the plan records.
    "extender": {
        *(f"{verb} {resource} in *" for verb in ("list", "watch") for resource in CACHED),
        "create pods/binding in e2e-*",
        *(f"{verb} configmaps in kube-rdma-plans" for verb in PLAN_RECORD_VERBS),
    },
    "kube-scheduler": None,
    "agent": {"get nodes in *", "patch nodes in *"},
}
COMPONENTS = {
    "webhook": (WEBHOOK_ACCOUNT, ""),
    "extender": (SCHEDULER_ACCOUNT, "OpenAPI-Generator"),
    "kube-scheduler": (SCHEDULER_ACCOUNT, "kube-scheduler"),
    "agent": (AGENT_ACCOUNT, ""),
}
TEST_NAMESPACE = re.compile(r" in e2e-[0-9a-f]+(-inj)?$")


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_each_component_did_what_it_needs_and_was_refused_nothing(
    stack: Stack, component: str
) -> None:
    account, agent = COMPONENTS[component]

    seen = activity(stack.plane.audit_log, user(account), agent)

    assert seen.refused == set()
    expected = DID[component]
    if expected is not None:
        assert {TEST_NAMESPACE.sub(" in e2e-*", call) for call in seen.did} == expected
