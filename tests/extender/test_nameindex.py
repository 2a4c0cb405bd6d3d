"""The tables answer as a name-by-name reading of the verdicts and totals would, whichever way
the shared index finds the names (the dict, or the hashed arrays of `_Hashed`), on random
tables changed between calls: passing names in their order, each failure map's entries in the
names' order (a name sent twice appears twice), unknown names, a name sent twice scored once,
names JSON escapes or that are not ASCII, and hashes that collide (a weak hash put in place)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender import nameindex
from extender.answers import Totals, Verdicts
from extender.filters import PASS, Verdict, fail, never
from extender.nameindex import Names
from extender.protocol import host_piece

UNKNOWN = "not in the cache"
VERDICTS = [PASS, PASS, fail("gpu: 2 of 8 free"), fail('rail "eth1" down (näher)'), never("no")]
ODD = ['quote"d', "back\\slash", "näher", "tab\tname", "nul\0", "n", ""]


@dataclass
class Node:
    name: str
    verdict: Verdict
    total: float


def verdict_of(node: Any) -> Verdict:
    return cast("Node", node).verdict


def total_of(node: Any) -> float:
    return cast("Node", node).total


class Cluster:
    """The cluster model as the tables read it: the nodes and a log of changed names."""

    def __init__(self) -> None:
        self.views: dict[str, Node] = {}
        self.log: list[str] = []

    @property
    def changes(self) -> int:
        return len(self.log)

    def changed_since(self, seen: int) -> list[str] | None:
        return self.log[seen:] if len(self.log) - seen < 50 else None

    def put(self, node: Node) -> None:
        self.views[node.name] = node
        self.log.append(node.name)

    def delete(self, name: str) -> None:
        if self.views.pop(name, None) is not None:
            self.log.append(name)


def expected_sort(cluster: Cluster, names: list[str]) -> tuple[list[str], bytes, bytes]:
    passed: list[str] = []
    failed: list[bytes] = []
    unresolvable: list[bytes] = []
    for name in names:
        node = cluster.views.get(name)
        verdict = node.verdict if node is not None else fail(UNKNOWN)
        piece = orjson.dumps(name) + b":" + orjson.dumps(verdict.reason)
        if verdict.ok:
            passed.append(name)
        else:
            (failed if verdict.resolvable else unresolvable).append(piece)
    return passed, b"{" + b",".join(failed) + b"}", b"{" + b",".join(unresolvable) + b"}"


def expected_answer(cluster: Cluster, names: list[str]) -> bytes:
    totals = {name: node.total for name, node in cluster.views.items()}
    pieces = [host_piece(n, totals.get(n, 0.0)) for n in dict.fromkeys(names)]
    return b"[" + b",".join(pieces) + b"]"


def weak(rows: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """A hash with few values: names collide, with each other and with names sent."""
    return rows[:, 0] % np.uint64(5)


def summed(rows: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """A hash blind to the order of a name's 8-byte words: `swapped` names collide."""
    summed: npt.NDArray[np.uint64] = rows.sum(axis=1, dtype=np.uint64)
    return summed


def swapped(name: str) -> str:
    """The name with its first two 8-byte words swapped (of the same hash, under `summed`)."""
    return name[8:16] + name[:8] + name[16:]


def names_for(rng: random.Random, count: int, odd: bool) -> list[str]:
    names = [f"node-{rng.randrange(10**6):06d}.rack-{rng.randrange(40)}" for _ in range(count)]
    return names + (ODD if odd else [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    nodes=st.integers(0, 60),
    odd=st.booleans(),
    hashing=st.sampled_from(["dict", "hashed", "weak"]),
    calls=st.integers(1, 4),
)
def test_tables_answer_as_the_names_read_one_by_one(
    seed: int, nodes: int, odd: bool, hashing: str, calls: int
) -> None:
    rng = random.Random(seed)
    cluster = Cluster()
    for name in names_for(rng, nodes, odd):
        cluster.put(Node(name, rng.choice(VERDICTS), rng.uniform(-2, 13)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nameindex, "HASHED_FROM", 10**9 if hashing == "dict" else 1)
        patch.setattr(nameindex, "HASHED_INDEX_FROM", 0)
        if hashing == "weak":
            patch.setattr(nameindex, "_mixed", summed)
        index = Names()
        verdicts, totals = Verdicts(index, verdict_of), Totals(index, total_of, 0)
        for _ in range(calls):
            known = list(cluster.views)
            sent = rng.choices(known, k=rng.randrange(0, 40)) if known else []
            sent += names_for(rng, rng.randrange(0, 3), odd=rng.random() < 0.3)
            sent += [swapped(n) for n in sent[:2] if hashing == "weak" and n[8:16] != n[:8]]
            rng.shuffle(sent)
            for table in (verdicts, totals):
                table.sync(cluster)  # type: ignore[arg-type]
            passed, failed, unresolvable = verdicts.sort(sent, UNKNOWN)
            assert (passed, failed.json, unresolvable.json) == expected_sort(cluster, sent)
            assert totals.answer(sent, 0.0).json == expected_answer(cluster, sent)
            change(cluster, rng)


def change(cluster: Cluster, rng: random.Random) -> None:
    """Nodes judged anew, deleted and added; now and then far more than the log keeps."""
    for _ in range(rng.choice([0, 3, 60])):
        known = list(cluster.views)
        if known and rng.random() < 0.4:
            cluster.delete(rng.choice(known))
        elif known and rng.random() < 0.5:
            node = cluster.views[rng.choice(known)]
            cluster.put(Node(node.name, rng.choice(VERDICTS), rng.uniform(0, 10)))
        else:
            cluster.put(Node(names_for(rng, 1, False)[0], rng.choice(VERDICTS), 5.0))


def test_a_weak_hash_finds_the_same_names() -> None:
    """Two names of one hash keep the arrays from being used; a name sent whose hash is a
    node's is told apart by its row."""
    cluster = Cluster()
    for i in range(40):
        cluster.put(Node(f"n{i}", VERDICTS[i % len(VERDICTS)], float(i % 11)))
    sent = [*(f"n{i}" for i in range(0, 40, 3)), "n99", "m1"]
    hashed = nameindex._Hashed.of(list(cluster.views))
    assert hashed.usable
    assert hashed.slots(sent) is None  # n99, m1: not found here, the dict will say
    assert list(hashed.slots(sent[:-2])) == list(range(0, 40, 3))  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nameindex, "_mixed", weak)
        assert not nameindex._Hashed.of(list(cluster.views)).usable
        only = nameindex._Hashed.of(["n1", "n2"])  # two names, two hashes under the weak one
        assert only.usable
        assert only.slots(["n2", "n1"]) is not None
        assert only.slots(["n2", "n6"]) is None  # n6 has n1's weak hash


def test_a_name_with_nul_is_not_taken_for_its_prefix() -> None:
    hashed = nameindex._Hashed.of(["node-1", "node-2"])
    assert hashed.slots(["node-1\0"]) is None
    assert hashed.slots(["node-1", "node-2"]) is not None


def test_names_longer_than_any_node_are_not_found() -> None:
    hashed = nameindex._Hashed.of(["node-1", "node-2"])
    width = hashed.dtype.itemsize
    assert hashed.slots(["node-1" + "x" * width]) is None
    assert hashed.slots(["node-1" + "x" * (width - 6)]) is None


def test_the_index_is_renumbered_when_gone_names_fill_it() -> None:
    cluster = Cluster()
    index = Names()
    table = Verdicts(index, verdict_of)
    for round_ in range(3):
        for i in range(1500):
            cluster.put(Node(f"r{round_}-{i}", PASS, 1.0))
        table.sync(cluster)  # type: ignore[arg-type]
        for i in range(1500):
            cluster.delete(f"r{round_}-{i}")
    cluster.put(Node("last", fail("full"), 1.0))
    table.sync(cluster)  # type: ignore[arg-type]
    assert index.epoch >= 1
    assert len(index.slots) <= 2 * len(cluster.views) + nameindex.SLACK
    passed, failed, _ = table.sort(["last", "r0-1"], UNKNOWN)
    assert (passed, dict(failed)) == ([], {"last": "full", "r0-1": UNKNOWN})


def test_a_shape_with_more_reasons_than_codes_answers_by_name() -> None:
    cluster = Cluster()
    for i in range(600):
        verdict = PASS if i % 4 == 0 else (fail if i % 3 else never)(f"reason {i}")
        cluster.put(Node(f"n{i}", verdict, 1.0))
    table = Verdicts(Names(), verdict_of)
    table.sync(cluster)  # type: ignore[arg-type]
    sent = [f"n{i}" for i in range(599, -1, -7)] + ["ghost", "n8"]
    passed, failed, unresolvable = table.sort(sent, UNKNOWN)
    assert (passed, failed.json, unresolvable.json) == expected_sort(cluster, sent)
