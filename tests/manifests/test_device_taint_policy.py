"""A node taints only its own devices: the ValidatingAdmissionPolicy of
manifests/agent/devicetaintpolicy.yaml, its CEL evaluated with cel-python against the
DeviceTaintRules the agent writes (agent/dra_taints.py) and forged ones."""

from __future__ import annotations

import copy

import pytest

from agent.dra_devices import DeviceId
from agent.dra_taints import rule_body
from kube_rdma.core.objects import Json
from tests.manifests.test_manifests import DOCUMENTS, find
from tests.manifests.test_node_policy import AGENT_USER, NODE, evaluate, request

POLICY = "kube-rdma-agent-own-devices"
OWN = DeviceId("dra.net", NODE, "pci-0000-1a-00-0")


def spec() -> Json:
    found: Json = find("ValidatingAdmissionPolicy", POLICY)["spec"]
    return found


def rule(device: DeviceId = OWN, node: str = NODE) -> Json:
    return rule_body("v1", node, device, "PortDown")


def judged(
    operation: str, new: Json | None, old: Json | None, bound: str | None = NODE
) -> list[str] | None:
    return evaluate(request(name="x", bound=bound, operation=operation), new, old, spec())


def test_the_agent_may_write_and_delete_its_own_rules() -> None:
    assert judged("CREATE", rule(), None) == []
    value_changed = copy.deepcopy(rule())
    value_changed["spec"]["taint"]["value"] = "PCIeLinkDegraded"
    assert judged("UPDATE", value_changed, rule()) == []
    assert judged("DELETE", None, rule()) == []


FOREIGN_LABEL = rule(node="gpu-9")
FOREIGN_LABEL["spec"]["deviceSelector"]["pool"] = NODE
OTHER_TAINT = rule()
OTHER_TAINT["spec"]["taint"]["key"] = "example.com/maintenance"


@pytest.mark.parametrize(
    ("operation", "new", "old", "bound", "message"),
    [
        ("CREATE", rule(DeviceId("dra.net", "gpu-9", "pci-0000-1a-00-0")), None, NODE, "pool"),
        ("CREATE", FOREIGN_LABEL, None, NODE, "labelled"),
        ("CREATE", OTHER_TAINT, None, NODE, "taint"),
        ("DELETE", None, rule(DeviceId("dra.net", "gpu-9", "d"), node="gpu-9"), NODE, "pool"),
        ("CREATE", rule(), None, None, "no node name"),
    ],
    ids=["another-pool", "another-label", "another-taint", "delete-another-s", "unbound-token"],
)  # fmt: skip
def test_anything_else_is_denied(
    operation: str, new: Json | None, old: Json | None, bound: str | None, message: str
) -> None:
    denied = judged(operation, new, old, bound)
    assert denied
    assert any(message in line for line in denied), denied


def test_other_users_are_left_alone() -> None:
    admin = request(name="x", user="kubernetes-admin", operation="CREATE")
    assert evaluate(admin, rule(DeviceId("dra.net", "gpu-9", "d")), None, spec()) is None
    assert AGENT_USER.endswith(":kube-rdma-agent")


def test_the_policy_is_bound_denying_and_fails_closed() -> None:
    assert spec()["failurePolicy"] == "Fail"
    binding = find("ValidatingAdmissionPolicyBinding", POLICY)
    assert binding["spec"] == {"policyName": POLICY, "validationActions": ["Deny"]}
    ours = [n for n, _ in DOCUMENTS if n.startswith("agent/devicetaintpolicy.yaml:")]
    assert ours == [
        f"agent/devicetaintpolicy.yaml:ValidatingAdmissionPolicy/{POLICY}",
        f"agent/devicetaintpolicy.yaml:ValidatingAdmissionPolicyBinding/{POLICY}",
    ]
