"""The per-shape tables give, on random clusters that change between calls, the answer the
straightforward way gives: the filter's as `Engine.verdict` per name, and the prioritize answer
byte for byte as `protocol.host_priorities` encodes `Engine.prioritize`'s scores."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender import protocol
from extender.cluster.model import Cluster
from extender.engine import Engine, FilterOutcome
from extender.podview import PodView, pod_view
from extender.weights import DEFAULT
from kube_rdma.core.objects import Json
from testbed.builders import nodes

NODES = [f"n{i}" for i in range(8)]
NAMES = [*NODES, "ghost"]
SHAPES = [
    pod_view(nodes.pod("eight")),
    pod_view(nodes.pod("ib", network="ib")),
    pod_view(nodes.pod("two", gpus=2, rdma={"rdma/hca": 2})),
    pod_view(nodes.pod("one", gpus=1)),
]


@st.composite
def node_objects(draw: st.DrawFn, name: str) -> Json:
    gpus = draw(st.sampled_from([4, 8]))
    down = tuple(draw(st.sets(st.integers(0, gpus - 1), max_size=2)))
    link = draw(st.sampled_from(["Ethernet", "InfiniBand"]))
    return nodes.node(name, nodes.hgx(link_layer=link, down=down, gpus=gpus), gpus=gpus)


def running(index: int, node: str, gpus: int) -> Json:
    return nodes.pod(f"job-{index}", gpus=gpus, node_name=node, phase="Running")


@st.composite
def changes(draw: st.DrawFn) -> list[tuple[str, str, Json | None]]:
    """Pods bound and gone, nodes replaced and deleted, between the calls."""
    found: list[tuple[str, str, Json | None]] = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["bind", "unbind", "node", "delete"]))
        node = draw(st.sampled_from(NODES))
        if kind == "bind":
            found.append((kind, node, running(i, node, draw(st.integers(1, 8)))))
        elif kind == "node":
            found.append((kind, node, draw(node_objects(node))))
        else:
            found.append((kind, node, None))
    return found


def apply(model: Cluster, change: tuple[str, str, Json | None]) -> None:
    kind, node, obj = change
    if kind == "bind" and obj is not None:
        model.upsert_pod(obj)
    elif kind == "unbind":
        on_node = [p for p in model.pods() if p["spec"].get("nodeName") == node]
        for gone in on_node[:1]:
            model.delete_pod((gone["metadata"]["namespace"], gone["metadata"]["name"]))
    elif kind == "node" and obj is not None:
        model.upsert_node(obj)
    elif kind == "delete":
        model.delete_node(node)


def straightforward(engine: Engine, pod: PodView, names: list[str]) -> FilterOutcome:
    verdicts = [(name, engine.verdict(pod, name)) for name in names]
    return FilterOutcome(
        [n for n, v in verdicts if v.ok],
        {n: v.reason for n, v in verdicts if not v.ok and v.resolvable},
        {n: v.reason for n, v in verdicts if not v.ok and not v.resolvable},
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    calls=st.lists(
        st.tuples(
            st.sampled_from(range(len(SHAPES))),
            st.lists(st.sampled_from(NAMES), max_size=12),
            changes(),
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_tables_answer_as_the_straightforward_way_on_random_clusters(
    data: st.DataObject, calls: list[tuple[int, list[str], list[tuple[str, str, Json | None]]]]
) -> None:
    model = Cluster()
    model.replace_nodes([data.draw(node_objects(name)) for name in NODES])
    engine = Engine(model, lambda: DEFAULT)
    for shape, names, between in calls:
        pod = SHAPES[shape]
        outcome = engine.filter(pod, names)
        expected = straightforward(Engine(model, lambda: DEFAULT), pod, names)
        assert outcome.passed == expected.passed
        assert list(outcome.failed.items()) == list(expected.failed.items())
        assert list(outcome.unresolvable.items()) == list(expected.unresolvable.items())
        wire = engine.answer_scores(pod, names).json
        assert wire == orjson.dumps(protocol.host_priorities(engine.prioritize(pod, names)))
        for change in between:
            apply(model, change)


def test_a_name_sent_twice_is_scored_once() -> None:
    model = Cluster()
    model.replace_nodes([nodes.node(name, nodes.hgx()) for name in NODES[:2]])
    engine = Engine(model, lambda: DEFAULT)
    pod = SHAPES[2]
    hosts = engine.answer_scores(pod, ["n1", "ghost", "n1", "n0"]).hosts()
    assert [h["Host"] for h in hosts] == ["n1", "ghost", "n0"]
    assert hosts == protocol.host_priorities(engine.prioritize(pod, ["n1", "ghost", "n1", "n0"]))


def test_scores_are_rounded_half_up_and_clamped_as_host_priorities_does() -> None:
    for score in (-3.0, -0.4, 0.0, 0.49, 0.5, 4.5, 9.49, 9.5, 10.0, 10.6, 40.0):
        piece = protocol.host_piece("n", score)
        assert orjson.loads(piece) == protocol.host_priorities({"n": score})[0], score
