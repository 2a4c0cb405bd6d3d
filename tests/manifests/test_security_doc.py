"""docs/security.md against the manifests: every role of kube-rdma is quoted there, verbatim,
and each quoted block is what its file grants; the threat model names what it relies on."""

from __future__ import annotations

import re

import pytest
import yaml

from kube_rdma.core.objects import Json
from tests.manifests.test_manifests import DOCUMENTS, MANIFESTS
from webhook.admission import PROTECTED_NAMESPACES

DOC = (MANIFESTS.parent / "docs" / "security.md").read_text()
BLOCK = re.compile(
    r"^```yaml\n# (ClusterRole|Role) (\S+)(?: in (\S+))? \((manifests/\S+)\)\n(rules:\n.*?)^```",
    re.MULTILINE | re.DOTALL,
)
QUOTED = {(m[0], m[1]): m for m in BLOCK.findall(DOC)}


def roles() -> list[tuple[str, Json]]:
    """(file, role) for every Role and ClusterRole of the RBAC files the stack applies."""
    return [
        (name.split(":")[0], doc)
        for name, doc in DOCUMENTS
        if doc["kind"] in ("Role", "ClusterRole")
    ] + [
        ("self-provision/rbac.yaml", doc)
        for doc in yaml.safe_load_all((MANIFESTS / "self-provision" / "rbac.yaml").read_text())
        if doc["kind"] in ("Role", "ClusterRole")
    ]


ROLES = roles()


@pytest.mark.parametrize(
    ("path", "role"), ROLES, ids=[f"{r['kind']}/{r['metadata']['name']}" for _, r in ROLES]
)
def test_every_role_is_quoted_verbatim(path: str, role: Json) -> None:
    kind, name = role["kind"], role["metadata"]["name"]
    assert (kind, name) in QUOTED, f"docs/security.md does not quote {kind} {name}"
    _, _, namespace, file, text = QUOTED[(kind, name)]
    assert file == f"manifests/{path}"
    assert (namespace or None) == role["metadata"].get("namespace")
    assert yaml.safe_load(text)["rules"] == role["rules"]
    assert text.rstrip("\n") in (MANIFESTS.parent / file).read_text()


def test_nothing_else_is_quoted() -> None:
    assert sorted(QUOTED) == sorted((r["kind"], r["metadata"]["name"]) for _, r in ROLES)


@pytest.mark.parametrize(
    "needed",
    [
        # the extender's rules, built by its owners (docs/gangs.md)
        "`--max-gang-size`",
        "`--eviction-budget`",
        "`--client-ca`",
        "`--metrics-port`",
        "see docs/gangs.md",
        "The eviction budget's default",
        # what this document's claims rest on
        "kube-rdma-agent-own-node",
        "authentication.kubernetes.io/node-name",
        "ServiceAccountTokenPodNodeInfo",
        "automountServiceAccountToken: false",
        "`--plan-namespace kube-rdma-plans`",
        "…(truncated)",
        "image@sha256:",
        "Train_Job",
    ],
)
def test_the_threat_model_names(needed: str) -> None:
    assert needed in DOC


def test_the_namespaces_never_mutated_are_named() -> None:
    for namespace in PROTECTED_NAMESPACES:
        assert f"`{namespace}`" in DOC


def test_each_identity_has_a_row_and_a_section() -> None:
    table = DOC.split("## Identities at a glance\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "webhook",
        "rdma-scheduler and the extender",
        "node agent",
        "the agent's init container `read-vpd`",
        "the resolver init container (`gid.strategy: pod`)",
        "tenants (who create pods)",
        "root on a GPU node",
    ]
    sections = re.findall(r"^## (.+)$", DOC, re.MULTILINE)
    for title in (
        "The webhook",
        "rdma-scheduler and the extender",
        "The node agent",
        "The agent's init container",
        "The resolver init container",
        "Tenants",
        "Root on a GPU node",
    ):
        assert title in sections
