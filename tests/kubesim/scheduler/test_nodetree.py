"""The node order (zones round-robin) and the in-tree pass's walk from a rotating offset."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kubesim.scheduler.nodetree import NodeTree, scan, scan_verdicts


def test_scan_starts_at_the_offset_and_counts_what_it_processed() -> None:
    nodes = [f"n{i}" for i in range(10)]
    reason = "Insufficient nvidia.com/gpu"

    def check(name: str) -> str | None:
        return reason if name in ("n3", "n8") else None

    assert scan(nodes, 2, 3, check) == (["n2", "n4", "n5"], {"n3": reason}, 4)
    assert scan(nodes, 7, 3, check) == (["n7", "n9", "n0"], {"n8": reason}, 4)
    feasible, failed, processed = scan(nodes, 5, 20, check)
    assert (len(feasible), failed, processed) == (8, {"n3": reason, "n8": reason}, 10)


def test_node_tree_takes_zones_round_robin() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C")]:
        tree.upsert(name, zone)
    tree.upsert("c2", "C")
    assert tree.list() == ["a1", "b1", "c1", "a2", "c2", "a3"]
    tree.remove("b1")
    assert tree.list() == ["a1", "c1", "a2", "c2", "a3"]
    tree.upsert("a2", "C")
    assert tree.list() == ["a1", "c1", "a3", "c2", "a2"]


@given(
    verdicts=st.lists(st.sampled_from([None, None, "Too many pods", "Insufficient cpu"])),
    start=st.integers(-5, 40),
    wanted=st.integers(-1, 40),
)
def test_scan_over_known_verdicts_walks_as_the_scan_node_by_node(
    verdicts: list[str | None], start: int, wanted: int
) -> None:
    nodes = [f"n{i}" for i in range(len(verdicts))]
    verdict = dict(zip(nodes, verdicts, strict=True))
    feasible, failed, processed = scan(nodes, start, wanted, verdict.__getitem__)
    fast_feasible, fast_failed, fast_processed = scan_verdicts(nodes, verdicts, start, wanted)
    assert (fast_feasible, list(fast_failed.items()), fast_processed) == (
        feasible,
        list(failed.items()),
        processed,
    )
