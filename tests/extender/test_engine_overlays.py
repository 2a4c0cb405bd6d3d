"""Answers with gang plans laid over them are kept while the cluster and the plans stay the
same: asked again and again, across changes to nodes, pods and plans, a warm engine answers
exactly as an engine asked for the first time."""

from __future__ import annotations

from collections.abc import Callable

from extender.book.reservations import Reservations
from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.weights import DEFAULT
from testbed.builders import nodes
from tests.extender.test_engine import EIGHT, GANG, LEAF, MEMBER, NAMES, TWO, cluster

NEED = {"nvidia.com/gpu": 8, "rdma/hca": 1}
OTHER = ("team-b", "other")


def answers(engine: Engine) -> list[object]:
    """Filter and prioritize, as a member of the gang and as pods outside it."""
    found: list[object] = []
    for pod, gang in ((EIGHT, None), (TWO, None), (MEMBER, GANG), (EIGHT, OTHER)):
        found.append(engine.filter(pod, [*NAMES, "ghost"], gang))
        found.append(engine.prioritize(pod, [*NAMES, "ghost"], gang))
        found.append(engine.answer_scores(pod, [*NAMES, "ghost"], gang).hosts())
    return found


def test_a_warm_engine_answers_as_a_fresh_one_across_changes() -> None:
    model = cluster()
    book = Reservations(LEAF)
    book.join(MEMBER.key, GANG)
    warm = Engine(model, lambda: DEFAULT, book)

    def fresh() -> list[object]:
        return answers(Engine(model, lambda: DEFAULT, book))

    changes: list[Callable[[], None]] = [
        lambda: book.hold(GANG, "leaf-a", ["a0", "a1"], ["a0", "a1"], NEED),
        lambda: model.upsert_pod(nodes.pod("six", gpus=6, rdma={"rdma/hca": 6}, node_name="a1")),
        lambda: book.hold(OTHER, "leaf-b", ["b0"], ["b0"], NEED),
        lambda: model.upsert_node(nodes.node("a0", nodes.hgx(down=(1,)), labels={LEAF: "x"})),
        lambda: model.delete_node("small"),
        lambda: book.settle(GANG, "a0", NEED),
        lambda: book.release(OTHER),
        lambda: model.upsert_node(nodes.node("a2", nodes.hgx(), labels={LEAF: "leaf-a"})),
    ]
    for change in [lambda: None, *changes]:
        change()
        for _ in range(3):  # the first ask, the one that keeps a table, and one answered from it
            assert answers(warm) == fresh()


def test_a_kept_table_is_not_rebuilt_while_nothing_changes() -> None:
    model: Cluster = cluster()
    book = Reservations(LEAF)
    book.hold(GANG, "leaf-a", ["a0"], ["a0"], NEED)
    book.join(MEMBER.key, GANG)
    engine = Engine(model, lambda: DEFAULT, book)
    first = [engine.answer_scores(MEMBER, NAMES, GANG).json for _ in range(3)]
    assert first[0] == first[1] == first[2]
    kept = engine.filter(EIGHT, NAMES), engine.filter(EIGHT, NAMES)
    assert kept[0] == kept[1] == engine.filter(EIGHT, NAMES)
