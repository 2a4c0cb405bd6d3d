"""A node speaks only for itself: the ValidatingAdmissionPolicy of manifests/agent/nodepolicy.yaml,
its CEL evaluated for real (cel-python) against AdmissionReview-like `request`, `object` and
`oldObject` variables.

The apiserver evaluates a policy as the Kubernetes docs ("Validating Admission Policy") say:
the match conditions first (all true, or the policy does not apply); then `variables`, in order,
each seeing those before it as `variables.<name>`; then every validation, and a request is
denied when one of them is false (or fails to evaluate, under failurePolicy Fail). `evaluate`
below does the same. The agent's own changes, made by the real agent against the fake
apiserver, pass; another node's, a foreign label, annotation or taint, and cordoning do not.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from agent.publisher import Agent, AgentSettings
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import sysfs_tree
from testbed.fakeapi import FakeApiServer
from tests.manifests.test_manifests import AGENT, DOCUMENTS, agent_pod, find

POLICY = "kube-rdma-agent-own-node"
AGENT_USER = f"system:serviceaccount:{AGENT}:{AGENT}"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE = "gpu-1"

_ENV = celpy.Environment()


def policy() -> Json:
    return find("ValidatingAdmissionPolicy", POLICY)


def _program(expression: str) -> Any:
    return _ENV.program(_ENV.compile(expression))


def _cel(value: Any) -> Any:
    return None if value is None else json_to_cel(value)


def evaluate(
    request: Json, obj: Json | None, old: Json | None, spec: Json | None = None
) -> list[str] | None:
    """The messages of the validations of `spec` (the node policy's by default) that deny the
    request; None when the policy does not apply to it (a match condition is false)."""
    spec = spec or policy()["spec"]
    activation: dict[str, Any] = {
        "request": _cel(request),
        "object": _cel(obj),
        "oldObject": _cel(old),
    }
    for condition in spec["matchConditions"]:
        if not bool(_program(condition["expression"]).evaluate(activation)):
            return None
    variables = celtypes.MapType({})
    activation["variables"] = variables
    for variable in spec["variables"]:
        value = _program(variable["expression"]).evaluate(activation)
        variables[celtypes.StringType(variable["name"])] = value
    denied = []
    for validation in spec["validations"]:
        try:
            passed = _program(validation["expression"]).evaluate(activation)
        except CELEvalError:  # failurePolicy Fail: an error denies
            passed = False
        if isinstance(passed, CELEvalError) or not bool(passed):
            denied.append(" ".join(validation["message"].split()))
    return denied


def request(
    name: str = NODE,
    bound: str | None = NODE,
    user: str = AGENT_USER,
    operation: str = "UPDATE",
    sub_resource: str = "",
) -> Json:
    """An AdmissionReview request as the apiserver builds it for a PATCH of Node `name` with a
    token bound to a pod on Node `bound` (None: a token without the node's name)."""
    extra = {NODE_NAME_KEY: [bound]} if bound is not None else {}
    user_info: Json = {"username": user, "groups": ["system:serviceaccounts"]}
    if extra:
        user_info["extra"] = extra
    return {
        "uid": "0b5c3e2a",
        "name": name,
        "operation": operation,
        "subResource": sub_resource,
        "userInfo": user_info,
    }


UNHEALTHY = {"key": keys.RDMA_UNHEALTHY, "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-01-01T00:00:00Z",
}


def node(name: str = NODE) -> Json:
    """A GPU node as the agent finds it after a first publish."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.present": "true",
                "network.example.com/leaf": "leaf-3",
                keys.RDMA_READY: "true",
                keys.ACCEPTANCE: keys.ACCEPTANCE_PASSED,
            },
            "annotations": {keys.TOPOLOGY: '{"v":1}', "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": [GPU_TAINT, UNREACHABLE]},
    }


def changed(change: Any, base: Json | None = None) -> tuple[Json, Json]:
    """(old, new): a node and a copy of it that `change` edited in place."""
    old = base if base is not None else node()
    new = copy.deepcopy(old)
    change(new)
    return old, new


def labels_of(n: Json) -> dict[str, str]:
    result: dict[str, str] = n["metadata"].setdefault("labels", {})
    return result


def annotations_of(n: Json) -> dict[str, str]:
    result: dict[str, str] = n["metadata"].setdefault("annotations", {})
    return result


def taints_of(n: Json) -> list[Json]:
    result: list[Json] = n["spec"].setdefault("taints", [])
    return result


def publish(n: Json) -> None:
    labels_of(n)[keys.RDMA_READY] = "false"
    annotations_of(n)[keys.TOPOLOGY] = '{"v":1,"rails":7}'


def bare() -> Json:
    """A node the agent has never published on."""
    return {"metadata": {"name": NODE}, "spec": {}}


ALLOWED = [
    ("publish-topology-and-readiness", changed(publish)),
    ("first-publish", changed(publish, bare())),
    ("taint-unhealthy", changed(lambda n: taints_of(n).append(UNHEALTHY))),
    (
        "untaint",
        changed(
            lambda n: n["spec"].update(taints=[GPU_TAINT, UNREACHABLE]),
            changed(lambda n: taints_of(n).insert(1, UNHEALTHY))[1],
        ),
    ),
    ("remove-own-label", changed(lambda n: labels_of(n).pop(keys.RDMA_READY))),
    ("no-change", changed(lambda n: None)),
]


@pytest.mark.parametrize(("old", "new"), [a[1] for a in ALLOWED], ids=[a[0] for a in ALLOWED])
def test_the_agent_may_change_its_own_keys_on_its_own_node(old: Json, new: Json) -> None:
    assert evaluate(request(), new, old) == []


NOT_ITS_NODE = (
    "the node agent may only change the Node its pod runs on (its token's "
    "authentication.kubernetes.io/node-name)"
)
LABEL = "the node agent may only change the label kube-rdma.io/rdma-ready"
ANNOTATION = "the node agent may only change the annotation kube-rdma.io/topology"
TAINT = "the node agent may only add or remove the taint kube-rdma.io/rdma-unhealthy:NoSchedule"
CORDON = "the node agent may not cordon or uncordon a Node"
PATCH_ONLY = "the node agent may only patch a Node, never create, delete or change its status"

DENIED: list[tuple[str, Json, tuple[Json | None, Json | None], list[str]]] = [
    ("another-node", request(name="gpu-2"), changed(publish, node("gpu-2")), [NOT_ITS_NODE]),
    ("token-without-node-name", request(bound=None), changed(publish), [NOT_ITS_NODE]),
    ("token-of-another-node", request(bound="gpu-2"), changed(publish), [NOT_ITS_NODE]),
    (
        "forge-acceptance",
        request(),
        changed(lambda n: labels_of(n).update({keys.ACCEPTANCE: keys.ACCEPTANCE_FAILED})),
        [LABEL],
    ),
    (
        "add-a-fabric-label",
        request(),
        changed(lambda n: labels_of(n).update({"network.example.com/spine": "s1"})),
        [LABEL],
    ),
    (
        "move-to-another-leaf",
        request(),
        changed(lambda n: labels_of(n).update({"network.example.com/leaf": "leaf-9"})),
        [LABEL],
    ),
    (
        "drop-a-label",
        request(),
        changed(lambda n: labels_of(n).pop("nvidia.com/gpu.present")),
        [LABEL],
    ),
    (
        "foreign-annotation",
        request(),
        changed(lambda n: annotations_of(n).update({"node.alpha.kubernetes.io/ttl": "30"})),
        [ANNOTATION],
    ),
    ("remove-a-foreign-taint", request(), changed(lambda n: taints_of(n).pop(1)), [TAINT]),
    (
        "drop-every-taint",
        request(),
        changed(lambda n: n["spec"].pop("taints")),
        [TAINT],
    ),
    (
        "own-key-other-effect",
        request(),
        changed(lambda n: taints_of(n).append({**UNHEALTHY, "effect": "NoExecute"})),
        [TAINT],
    ),
    (
        "uncordon",
        request(),
        changed(
            lambda n: n["spec"].pop("unschedulable"),
            changed(lambda n: n["spec"].update(unschedulable=True))[1],
        ),
        [CORDON],
    ),
    ("cordon", request(), changed(lambda n: n["spec"].update(unschedulable=True)), [CORDON]),
    (
        "status",
        request(sub_resource="status"),
        changed(lambda n: n.update(status={"capacity": {"rdma/hca": "1000"}})),
        [PATCH_ONLY],
    ),
    ("delete", request(operation="DELETE"), (node(), None), [PATCH_ONLY]),
    ("create", request(operation="CREATE"), (None, node()), [PATCH_ONLY]),
    (
        "everything-at-once",
        request(name="gpu-2", bound=NODE),
        changed(
            lambda n: (
                labels_of(n).update({keys.ACCEPTANCE: keys.ACCEPTANCE_FAILED}),
                annotations_of(n).pop("node.alpha.kubernetes.io/ttl"),
                n["spec"].update(taints=[], unschedulable=True),
            ),
            node("gpu-2"),
        ),
        [NOT_ITS_NODE, LABEL, ANNOTATION, TAINT, CORDON],
    ),
]


@pytest.mark.parametrize(
    ("review", "old", "new", "messages"),
    [(d[1], *d[2], d[3]) for d in DENIED],
    ids=[d[0] for d in DENIED],
)
def test_anything_else_is_denied(
    review: Json, old: Json | None, new: Json | None, messages: list[str]
) -> None:
    assert evaluate(review, new, old) == messages


@pytest.mark.parametrize(
    "user", ["system:node:gpu-1", "kubernetes-admin", "system:serviceaccount:kube-rdma:x"]
)
def test_other_users_are_left_alone(user: str) -> None:
    old, new = changed(lambda n: n["spec"].update(unschedulable=True, taints=[]))
    assert evaluate(request(name="gpu-2", bound=None, user=user), new, old) is None


async def test_the_real_agent_s_patches_pass(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    """Each step of the agent (a first publish, a link down, every link down with
    --taint-unhealthy, and back up) turns the Node into one the policy lets it write."""
    start = node()
    del start["metadata"]["labels"][keys.RDMA_READY]
    del start["metadata"]["annotations"][keys.TOPOLOGY]
    fake_api.create("nodes", start)
    trees = {}
    for name, down in (("up", set()), ("one-down", {0}), ("dead", set(range(8)))):
        trees[name] = tmp_path / name
        sysfs_tree.hgx_8gpu_8nic(trees[name], down=down)
    steps = [("up", False), ("one-down", False), ("dead", True), ("up", True)]
    for tree, taint_unhealthy in steps:
        settings = AgentSettings(
            node_name=NODE,
            sysfs_root=trees[tree],
            interval=30.0,
            recover_after=1,
            taint_unhealthy=taint_unhealthy,
        )
        before = copy.deepcopy(fake_api.get("nodes", NODE))
        await Agent(core_v1, settings).step()
        after = fake_api.get("nodes", NODE)
        assert evaluate(request(), after, before) == [], tree
    assert UNHEALTHY not in taints_of(fake_api.get("nodes", NODE))
    assert labels_of(fake_api.get("nodes", NODE))[keys.RDMA_READY] == "true"


def test_the_policy_is_bound_denying_and_fails_closed() -> None:
    spec = policy()["spec"]
    assert spec["failurePolicy"] == "Fail"
    binding = find("ValidatingAdmissionPolicyBinding", POLICY)
    assert binding["spec"] == {"policyName": POLICY, "validationActions": ["Deny"]}
    account = agent_pod()["serviceAccountName"]
    namespace = find("ServiceAccount", account)["metadata"]["namespace"]
    assert f"system:serviceaccount:{namespace}:{account}" == AGENT_USER
    assert spec["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["*"],
            "resources": ["nodes", "nodes/status"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
        }
    ]
    ours = [n for n, _ in DOCUMENTS if n.startswith("agent/nodepolicy.yaml:")]
    assert ours == [
        f"agent/nodepolicy.yaml:ValidatingAdmissionPolicy/{POLICY}",
        f"agent/nodepolicy.yaml:ValidatingAdmissionPolicyBinding/{POLICY}",
    ]


def test_the_keys_the_policy_names_are_the_agent_s() -> None:
    text = (Path(__file__).resolve().parents[2] / "manifests/agent/nodepolicy.yaml").read_text()
    expressions = yaml.safe_dump(policy()["spec"])
    for key in (keys.RDMA_READY, keys.TOPOLOGY, keys.RDMA_UNHEALTHY):
        assert key in expressions
    assert keys.ACCEPTANCE not in expressions
    assert "ServiceAccountTokenPodNodeInfo" in text
