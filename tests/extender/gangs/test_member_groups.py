"""A gang's members grouped by the nodes they may use (extender/gangs/pools.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.gangs.choose import Fit, choose_for_groups
from extender.gangs.pools import MemberGroup, member_groups, open_groups
from kube_rdma.core import keys
from kube_rdma.core.nodeconstraints import NodeConstraints, NodeFacts, Taint
from kube_rdma.core.objects import Json


def pod(**spec: Any) -> Json:
    return {"metadata": {"name": "p"}, "spec": spec}


PINNED = pod(nodeSelector={"pool": "a"})
PLAIN = pod()
TOLERANT = pod(tolerations=[{"key": "t", "operator": "Exists"}])


def counts(groups: list[MemberGroup]) -> list[tuple[Any, int]]:
    return [(g.constraints.key, g.count) for g in groups]


def key(the_pod: Json) -> Any:
    return NodeConstraints.of(the_pod).key


GROUPS = [
    # waiting, bound, needed, groups (constraints key, count), largest first
    ("one group", [PLAIN] * 4, [], 4, [(key(PLAIN), 4)]),
    (
        "master and workers",
        [PINNED, PLAIN, PLAIN, PLAIN],
        [],
        4,
        [(key(PLAIN), 3), (key(PINNED), 1)],
    ),
    (
        "members not created yet join the most common",
        [PINNED, PLAIN, PLAIN],
        [],
        6,
        [(key(PLAIN), 5), (key(PINNED), 1)],
    ),
    (
        "bound members count towards the most common",
        [PLAIN],
        [PINNED, PINNED],
        3,
        [(key(PINNED), 2), (key(PLAIN), 1)],
    ),
    (
        "pods past the size come off the most common",
        [PLAIN, PLAIN, PLAIN, PINNED],
        [],
        3,
        [(key(PLAIN), 2), (key(PINNED), 1)],
    ),
    ("nothing seen: the fallback pod's", [], [], 2, [(key(TOLERANT), 2)]),
]


@pytest.mark.parametrize(
    ("waiting", "bound", "needed", "expected"), [c[1:] for c in GROUPS], ids=[c[0] for c in GROUPS]
)
def test_member_groups(
    waiting: list[Json], bound: list[Json], needed: int, expected: list[tuple[Any, int]]
) -> None:
    assert counts(member_groups(waiting, bound, needed, TOLERANT)) == expected


def node(pool: str, *taints: str) -> NodeFacts:
    return NodeFacts("n", {"pool": pool}, tuple(Taint(t, "", "NoSchedule") for t in taints))


def group(the_pod: Json) -> MemberGroup:
    return MemberGroup(NodeConstraints.of(the_pod), 1)


OPEN = [
    ("one group admitted: no set", [group(PLAIN)], node("b"), None),
    ("one group refused", [group(PINNED)], node("b"), frozenset()),
    ("both admitted: no set", [group(PLAIN), group(PINNED)], node("a"), None),
    ("only the plain group", [group(PLAIN), group(PINNED)], node("b"), frozenset({0})),
    (
        "a taint only the tolerant group tolerates",
        [group(PLAIN), group(TOLERANT)],
        node("a", "t"),
        frozenset({1}),
    ),
    ("no groups known", [], node("a", "t"), None),
]


@pytest.mark.parametrize(
    ("groups", "facts", "expected"), [c[1:] for c in OPEN], ids=[c[0] for c in OPEN]
)
def test_open_groups(
    groups: list[MemberGroup], facts: NodeFacts, expected: frozenset[int] | None
) -> None:
    assert open_groups(groups, facts) == expected


FITS = st.dictionaries(
    st.sampled_from([f"n{i}" for i in range(8)]),
    st.builds(
        Fit,
        count=st.integers(1, 3),
        score=st.sampled_from([1.0, 5.0, 9.0]),
        labels=st.fixed_dictionaries({keys.LEAF: st.sampled_from(["l1", "l2"])}),
        groups=st.one_of(st.none(), st.frozensets(st.integers(0, 2), max_size=3)),
    ),
    min_size=1,
)


@given(FITS, st.lists(st.integers(0, 4), min_size=1, max_size=3))
def test_a_choice_respects_every_node_and_group(fits: dict[str, Fit], demands: list[int]) -> None:
    choice = choose_for_groups(fits, demands, (keys.LEAF,))
    if choice is None:
        return
    groups = choice.groups or [0] * len(choice.nodes)
    assert sorted(groups) == sorted(g for g, n in enumerate(demands) for _ in range(n))
    for name in set(choice.nodes):
        assert choice.nodes.count(name) <= fits[name].count
    for name, g in zip(choice.nodes, groups, strict=True):
        allowed = fits[name].groups
        assert allowed is None or g in allowed
    if choice.nodes and choice.domain != "cluster":
        assert {fits[n].labels[keys.LEAF] for n in choice.nodes} == {choice.domain}
