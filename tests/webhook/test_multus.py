"""Merging rail networks into the Multus annotation in both of its forms."""

from __future__ import annotations

import pytest

from webhook.multus import NetworksError, merge

RAILS = ["kube-rdma/rail1", "kube-rdma/rail2"]

CASES = [
    ("absent", None, "kube-rdma/rail1,kube-rdma/rail2"),
    ("empty", "", "kube-rdma/rail1,kube-rdma/rail2"),
    ("other-network-kept-first", "storage", "storage,kube-rdma/rail1,kube-rdma/rail2"),
    ("one-present", "kube-rdma/rail1@net1", "kube-rdma/rail1@net1,kube-rdma/rail2"),
    ("all-present", "kube-rdma/rail2, kube-rdma/rail1", None),
    (
        "pod-namespace-is-default",
        "rail1",
        "rail1,kube-rdma/rail1,kube-rdma/rail2",
    ),
    (
        "json-form",
        '[{"name":"rail1","namespace":"kube-rdma","interface":"net1"}]',
        '[{"name":"rail1","namespace":"kube-rdma","interface":"net1"},'
        '{"name":"rail2","namespace":"kube-rdma"}]',
    ),
    (
        "json-all-present",
        '[{"name":"rail1","namespace":"kube-rdma"},{"name":"rail2","namespace":"kube-rdma"}]',
        None,
    ),
]


@pytest.mark.parametrize(("current", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_merge(current: str | None, expected: str | None) -> None:
    assert merge(current, RAILS, "team-a") == expected


def test_unqualified_rails_use_the_pod_namespace() -> None:
    assert merge("team-a/rail1", ["rail1", "rail2@net2"], "team-a") == "team-a/rail1,rail2@net2"
    assert merge("[]", ["rail2@net2"], "team-a") == (
        '[{"name":"rail2","namespace":"team-a","interface":"net2"}]'
    )


@pytest.mark.parametrize(
    ("current", "message"),
    [
        (
            "[{",
            "k8s.v1.cni.cncf.io/networks is not valid JSON: Expecting property name enclosed in "
            "double quotes: line 1 column 3 (char 2)",
        ),
        ('[{"namespace": "x"}]', "k8s.v1.cni.cncf.io/networks: each entry needs a string `name`"),
        ('["rail1"]', "k8s.v1.cni.cncf.io/networks: each entry needs a string `name`"),
    ],
)
def test_unreadable_annotation_is_an_error(current: str, message: str) -> None:
    with pytest.raises(NetworksError) as error:
        merge(current, RAILS, "team-a")
    assert str(error.value) == message
