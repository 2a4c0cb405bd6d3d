"""The per-shape tables' lookups alone (extender/answers.py), against the number of nodes they
hold: `Verdicts.sort` and `Totals.answer` over the same number of names in tables of 5,000 to
100,000 nodes, without the cluster model, the scheduler or the wire around them.

What bench/scale.py measures on a generated cluster takes minutes and gigabytes to build at
100,000 nodes; this takes seconds, and shows whether a call's cost still grows with the table.
The heap is made to look like the extender's: each node name is decoded from JSON between
ballast objects (the other objects decoded with each node), part of the ballast is then freed,
and the tables, built after it, fill the holes strewn over the heap as they would. Six shapes
are asked in turn, each with its own tables (six verdict tables and six totals tables share
one index of names), as bench/scale.py's calls cycle through six pod shapes; the names of each
call are a fresh random sample, decoded from JSON as a request's are. A shape's verdicts: about
a third of the nodes pass, most of the others fail for now for one of a dozen reasons, one in
nineteen whatever is freed.

`--numpy` also times an alternative not kept: Python's `hash` of each name searched in a sorted
array of the nodes' hashes, each match checked against the node's name string (two names can
share a hash), next to the shared index's dict lookup for the same codes. (The tables' own
numpy path, `extender.nameindex._Hashed`, is what "filter" and "prioritize" time from 10,000
nodes.)

    python -m bench.lookup [--sizes 5000,20000,100000] [--names 5000] [--calls 120] [--numpy]
        [--against former_answers.py]

`--against` times another version of extender/answers.py on the same heap, in turn with this
one, round by round (figures from separate runs move by 1.5-2x with the other work on the
machine).

Figures are the median CPU time of a call (`time.thread_time`, ms), the lowest of `--rounds`
rounds, the rounds interleaved between the two verbs.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import eq, itemgetter
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from extender import answers, nameindex
from extender.filters import Verdict

SHAPES = 6
VERDICTS = [
    *[Verdict(True)] * 6,
    *[Verdict(False, f"nvidia.com/gpu: {k} of 8 free, pod needs 8", True) for k in range(8)],
    *[
        Verdict(False, f"rails down: mlx5_{k}; 7 of 8 Ethernet ports usable, pod needs 8", True)
        for k in range(4)
    ],
    Verdict(False, "nvidia.com/gpu: node has 4, pod needs 8", False),
]


@dataclass(frozen=True)
class Node:
    """What a table's judge reads of a node: here only a state that picks its verdict."""

    name: str
    state: int


class Cluster:
    """The part of the cluster model the tables read: the nodes, and no changes."""

    def __init__(self, views: dict[str, Node]) -> None:
        self.views = views
        self.changes = 0

    def changed_since(self, seen: int) -> list[str]:
        return []


def node_name(i: int) -> str:
    return f"gpu-s{i % 97:03d}-l{i % 31:02d}-{i:06d}"


def heap(nodes: int, seed: int = 7) -> tuple[Cluster, list[Any]]:
    """The nodes, their names decoded between ballast objects, part of the ballast freed."""
    rng = random.Random(seed)
    ballast: list[list[bytes]] = []
    views: dict[str, Node] = {}
    for i in range(nodes):
        name = orjson.loads(orjson.dumps(node_name(i)))
        ballast.append([bytes(rng.randrange(30, 300)) for _ in range(20)])
        views[name] = Node(name, rng.randrange(len(VERDICTS)))
    for kept in ballast:
        del kept[: rng.randrange(5, 20)]
    return Cluster(views), ballast


def judge(shape: int) -> Callable[[Any], Verdict]:
    order = list(range(len(VERDICTS)))
    random.Random(shape).shuffle(order)
    return lambda node: VERDICTS[order[node.state]]


def total(shape: int) -> Callable[[Any], float]:
    return lambda node: ((node.state * 7 + shape) % 23) / 2.2


Call = Callable[[tuple[list[str], int]], object]


def median_ms(call: Call, bodies: list[bytes]) -> float:
    """The median CPU time of `call` on each body's names (decoded as a request's are) and the
    shapes in turn."""
    spent = []
    for i, body in enumerate(bodies):
        names = orjson.loads(body)
        start = time.thread_time()
        call((names, i % SHAPES))
        spent.append(time.thread_time() - start)
    return statistics.median(spent) * 1e3


class HashedIndex:
    """The alternative: each name's slot found by its hash in a sorted array, then checked."""

    def __init__(self, names: nameindex.Names) -> None:
        import numpy as np

        self.np = np
        self.keys = list(names.slots)
        hashes = np.fromiter(map(hash, self.keys), np.int64, len(self.keys))
        self.order = np.argsort(hashes, kind="stable")
        self.sorted = hashes[self.order]

    def slots(self, names: list[str]) -> Any:
        np = self.np
        hashes = np.fromiter(map(hash, names), np.int64, len(names))
        at = np.minimum(np.searchsorted(self.sorted, hashes), len(self.sorted) - 1)
        if not (self.sorted[at] == hashes).all():
            raise KeyError
        slots = self.order[at]
        if not all(map(eq, names, itemgetter(*slots.tolist())(self.keys))):
            raise KeyError
        return slots


def tables(module: ModuleType, cluster: Cluster) -> tuple[list[Any], list[Any], Any]:
    """Six shapes' verdict and totals tables over one index, as `module` builds them."""
    names = module.Names()  # the former answers.py held its own index
    verdicts = [module.Verdicts(names, judge(s)) for s in range(SHAPES)]
    totals = [module.Totals(names, total(s), None) for s in range(SHAPES)]
    for table in (*verdicts, *totals):
        table.sync(cluster)
    return verdicts, totals, names


def calls(module: ModuleType, cluster: Cluster, label: str, hashed: bool) -> dict[str, Call]:
    verdicts, totals, names = tables(module, cluster)
    unknown = "node is not in the extender's cache yet (just added?); it is retried"
    timed: dict[str, Call] = {
        f"{label}filter": lambda a: verdicts[a[1]].sort(a[0], unknown),
        f"{label}prioritize": lambda a: totals[a[1]].answer(a[0], 0.0),
    }
    if hashed:
        index = HashedIndex(names)
        codes = [verdict._codes for verdict in verdicts]
        timed["codes by dict"] = lambda a: itemgetter(*names.of(a[0]))(codes[a[1]])
        timed["codes by numpy"] = lambda a: itemgetter(*index.slots(a[0]).tolist())(codes[a[1]])
    return timed


def one_size(nodes: int, args: argparse.Namespace) -> None:
    cluster, ballast = heap(nodes)
    timed = calls(answers, cluster, "", args.numpy)
    if args.against:
        timed |= calls(former(args.against), cluster, "former ", hashed=False)
    rng = random.Random(1)
    population = list(cluster.views)
    count = min(args.names, nodes)
    bodies = [orjson.dumps(rng.sample(population, count)) for _ in range(args.calls)]
    gc.freeze()
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for label, call in timed.items():
            found = median_ms(call, bodies)
            best[label] = min(best.get(label, found), found)
    gc.unfreeze()
    figures = "  ".join(f"{label} {ms:.2f}" for label, ms in best.items())
    print(f"{nodes:>7,} nodes, {count:,} names: {figures}", flush=True)
    del ballast


def former(path: Path) -> ModuleType:
    """Another version of extender/answers.py (`git show REV:extender/answers.py > F`)."""
    spec = importlib.util.spec_from_file_location("former_answers", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,100000")
    parser.add_argument("--names", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--numpy", action="store_true")
    parser.add_argument("--against", type=Path, help="another answers.py, timed in turn")
    args = parser.parse_args()
    with open("/proc/loadavg") as load:
        print("loadavg", load.read().split()[:3])
    for size in (int(s) for s in args.sizes.split(",")):
        one_size(size, args)
        gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
