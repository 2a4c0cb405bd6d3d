"""Which nodes test together, in which round.

The procedure every acceptance guide follows: first node pairs (a bad node or cable shows up
in both of its pairs and nowhere else), then each leaf switch as a whole, then all nodes.
Pairs mode tests every node against a node of its own leaf (the leaf's ports) and against a node
of another leaf (the uplinks), in few rounds: within a round no node is in two tests, so the
tests of a round run at once without sharing a GPU.

Pure: node names and their leaves in, rounds of groups out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    PAIRS = "pairs"
    LEAF = "leaf"
    ALL = "all"


@dataclass(frozen=True)
class Group:
    """One test: these nodes run one nccl-tests job together."""

    name: str
    round: int
    nodes: tuple[str, ...]


def plan(nodes: Sequence[str], leaves: Mapping[str, str], mode: Mode) -> list[Group]:
    """The tests for `nodes`; a node without a leaf counts as a leaf of its own name."""
    if mode is Mode.ALL:
        return [Group("all", 0, tuple(nodes))]
    by_leaf: dict[str, list[str]] = {}
    for node in nodes:
        by_leaf.setdefault(leaves.get(node, ""), []).append(node)
    if mode is Mode.LEAF:
        return [
            Group(f"leaf-{leaf or 'none'}", 0, tuple(members))
            for leaf, members in sorted(by_leaf.items())
        ]
    rounds = [*_within_leaves(by_leaf), *_across_leaves(nodes, leaves)]
    return [
        Group(f"r{number}-{index}", number, pair)
        for number, pairs in enumerate(r for r in rounds if r)
        for index, pair in enumerate(pairs)
    ]


Round = list[tuple[str, ...]]


def _within_leaves(by_leaf: Mapping[str, list[str]]) -> list[Round]:
    """Neighbours of each leaf paired up; a leaf's odd node out pairs with the leaf's first
    node in a second round."""
    first: Round = []
    second: Round = []
    for members in by_leaf.values():
        first += [(members[i], members[i + 1]) for i in range(0, len(members) - 1, 2)]
        if len(members) % 2 and len(members) > 1:
            second.append((members[-1], members[0]))
    return [first, second]


def _across_leaves(nodes: Sequence[str], leaves: Mapping[str, str]) -> list[Round]:
    """Nodes sorted by leaf, node i with node i + ceil(n/2): different leaves whenever no leaf
    holds more than half the nodes; with an odd count, the middle node pairs with node
    ceil(n/2) in a second round. Nothing when all nodes share one leaf."""
    if len({leaves.get(n, "") for n in nodes}) < 2:
        return []
    ordered = sorted(nodes, key=lambda n: (leaves.get(n, ""), n))
    half = (len(ordered) + 1) // 2
    first: Round = [(ordered[i], ordered[i + half]) for i in range(len(ordered) - half)]
    second: Round = [(ordered[half - 1], ordered[half])] if len(ordered) % 2 else []
    return [first, second]
