"""Per-shape answers stay exact as the cluster changes: a pod bound or gone, a node's document
or capacity changed, a node added or deleted, the weights reloaded, the change log outrun.

Each case compares the engine that kept its tables across the change with a fresh engine over
the same cluster (which builds every table anew), and states the changed node's answer."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from extender import protocol
from extender.answers import Verdicts
from extender.cluster.model import Cluster
from extender.engine import Engine, FilterOutcome
from extender.filters import PASS, fail, never
from extender.nameindex import Names
from extender.podview import PodView, pod_view
from extender.weights import DEFAULT, Weights
from kube_rdma.core.objects import Json
from testbed.builders import nodes

EIGHT = pod_view(nodes.pod("eight"))
TWO = pod_view(nodes.pod("two", gpus=2, rdma={"rdma/hca": 2}))
NAMES = ["n0", "n1", "n2", "ghost"]
GHOST = "node is not in the extender's cache yet (just added?); it is retried"


def cluster() -> Cluster:
    found = Cluster()
    found.replace_nodes([nodes.node(name, nodes.hgx()) for name in NAMES[:3]])
    return found


def running(name: str, node: str, gpus: int) -> Json:
    return nodes.pod(name, gpus=gpus, rdma={"rdma/hca": 1}, node_name=node, phase="Running")


def same_as_fresh(engine: Engine, model: Cluster, pod: PodView = EIGHT) -> FilterOutcome:
    """The kept engine's filter outcome, checked against a fresh engine's, and its scores."""
    fresh = Engine(model, lambda: DEFAULT)
    outcome = engine.filter(pod, NAMES)
    assert outcome == fresh.filter(pod, NAMES)
    assert engine.prioritize(pod, NAMES) == fresh.prioritize(pod, NAMES)
    return outcome


def bind_then_delete(model: Cluster, pod: Json) -> None:
    model.upsert_pod(pod)
    model.delete_pod(("team-a", pod["metadata"]["name"]))


Change = Callable[[Cluster], None]
CHANGES: list[tuple[str, Change, FilterOutcome]] = [
    (
        "a pod bound",
        lambda c: c.upsert_pod(running("job", "n1", 6)),
        FilterOutcome(
            ["n0", "n2"], {"n1": "nvidia.com/gpu: 2 of 8 free, pod needs 8", "ghost": GHOST}, {}
        ),
    ),
    (
        "a pod bound, then gone",
        lambda c: bind_then_delete(c, running("job", "n1", 6)),
        FilterOutcome(["n0", "n1", "n2"], {"ghost": GHOST}, {}),
    ),
    (
        "a rail down",
        lambda c: c.upsert_node(nodes.node("n2", nodes.hgx(down=(5,)))),
        FilterOutcome(
            ["n0", "n1"],
            {"ghost": GHOST},
            {"n2": "rails down: mlx5_5; 7 of 8 Ethernet ports usable, pod needs 8"},
        ),
    ),
    (
        "a node deleted",
        lambda c: c.delete_node("n0"),
        FilterOutcome(["n1", "n2"], {"n0": GHOST, "ghost": GHOST}, {}),
    ),
    (
        "a node added",
        lambda c: c.upsert_node(nodes.node("ghost", nodes.hgx(gpus=4), gpus=4)),
        FilterOutcome(["n0", "n1", "n2"], {}, {"ghost": "nvidia.com/gpu: node has 4, pod needs 8"}),
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_change_reaches_the_tables_of_shapes_already_asked(
    change: Change, expected: FilterOutcome
) -> None:
    model = cluster()
    engine = Engine(model, lambda: DEFAULT)
    same_as_fresh(engine, model)
    same_as_fresh(engine, model, TWO)
    change(model)
    assert same_as_fresh(engine, model) == expected
    same_as_fresh(engine, model, TWO)


def test_a_table_further_behind_than_the_change_log_is_rebuilt() -> None:
    model = cluster()
    engine = Engine(model, lambda: DEFAULT)
    seen = model.changes
    same_as_fresh(engine, model)
    for i in range(3000):  # binds and releases: far more changes than the log keeps
        model.upsert_pod(running("churn", f"n{i % 3}", 1 + i % 8))
    assert model.changed_since(seen) is None
    model.upsert_pod(running("churn", "n2", 8))
    outcome = same_as_fresh(engine, model)
    assert outcome.failed["n2"] == "nvidia.com/gpu: 0 of 8 free, pod needs 8"


def test_the_change_log_names_each_node_whose_view_changed() -> None:
    model = cluster()
    seen = model.changes
    model.upsert_pod(running("a", "n1", 2))
    model.upsert_pod(nodes.pod("pending"))  # bound nowhere: no node changes
    model.delete_node("n2")
    assert model.changed_since(seen) == ["n1", "n2"]
    assert model.changed_since(model.changes) == []


def test_reloaded_weights_give_new_totals() -> None:
    model = cluster()
    model.upsert_pod(running("job", "n1", 6))
    weights = [DEFAULT]
    engine = Engine(model, lambda: weights[0])
    assert engine.prioritize(TWO, ["n0", "n1"]) == {"n0": (30 + 10 + 5 + 10) / 7, "n1": 10.0}
    weights[0] = Weights(affinity=0, rate=0, binpack=1, locality=0)
    assert engine.prioritize(TWO, ["n0", "n1"]) == {"n0": 2.5, "n1": 10.0}


def test_names_come_back_in_the_order_they_were_sent() -> None:
    model = cluster()
    model.upsert_pod(running("job", "n1", 6))
    engine = Engine(model, lambda: DEFAULT)
    outcome = engine.filter(EIGHT, ["ghost", "n2", "n1", "n0", "n2"])
    assert outcome.passed == ["n2", "n0", "n2"]
    assert list(outcome.failed) == ["ghost", "n1"]
    assert list(engine.prioritize(TWO, ["n2", "ghost", "n0"])) == ["n2", "ghost", "n0"]


def test_a_reason_both_resolvable_and_not_is_sorted_by_node() -> None:
    model = cluster()
    verdicts = {"n0": fail("same words"), "n1": never("same words"), "n2": PASS}
    table = Verdicts(Names(), lambda node: verdicts[node.name])
    table.sync(model)
    passed, failed, unresolvable = table.sort(["n1", "n0", "ghost", "n2"], GHOST)
    assert (passed, dict(failed), dict(unresolvable)) == (
        ["n2"],
        {"n0": "same words", "ghost": GHOST},
        {"n1": "same words"},
    )


def test_failures_go_on_the_wire_as_the_json_of_their_map() -> None:
    model = cluster()
    quoted = 'rail "eth1" is \\down\\ (näher: 𝛑)'
    verdicts = {"n0": fail(quoted), "n1": never("no GPUs"), "n2": PASS}
    table = Verdicts(Names(), lambda node: verdicts[node.name])
    table.sync(model)
    passed, failed, unresolvable = table.sort(["n0", "ghost", "n1", "n2"], GHOST)
    args = protocol.ExtenderArgs(nodes.pod("p"), ["n0", "ghost", "n1", "n2"], None)
    wire = orjson.loads(orjson.dumps(protocol.filter_result(args, passed, failed, unresolvable)))
    assert wire == {
        "NodeNames": ["n2"],
        "FailedNodes": {"n0": quoted, "ghost": GHOST},
        "FailedAndUnresolvableNodes": {"n1": "no GPUs"},
        "Nodes": None,
        "Error": "",
    }
    assert list(wire["FailedNodes"]) == ["n0", "ghost"]  # in the names' order
