"""Small clusters where the right placement is known by construction, simulated end to end:
plain kube-scheduler against the real extender in the same process, on the simulated clock."""

from __future__ import annotations

from pathlib import Path

from extender.weights import DEFAULT, Weights
from kube_rdma.core.topology import Level
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Settings, Variant, simulate
from testbed.builders.nodes import hgx, node
from tests.kubesim.simulate.clusters import job, leaf_node, running, snapshot

PLAIN = Variant("kube-scheduler", None)
EXTENDER = Variant("extender", DEFAULT)


def test_a_gang_that_fits_only_one_leaf_goes_there_whole(tmp_path: Path) -> None:
    # Leaf a: 4 nodes, 2 of them full; leaf b: 4 empty nodes. The gang of 4 fits only in b,
    # while plain kube-scheduler takes a's free nodes first (ties go to the smallest name).
    nodes = [leaf_node(f"a-{i}", "a") for i in range(4)] + [
        leaf_node(f"b-{i}", "b") for i in range(4)
    ]
    busy = [running(f"busy-{i}", f"a-{i}", 8) for i in range(2)]
    cluster = snapshot(tmp_path, nodes + busy)
    jobs = [job("gang", 4, 8, arrival=10.0)]
    results = {}
    for variant in (PLAIN, EXTENDER):
        run = simulate(cluster, jobs, variant, Settings())
        gang = run.emulator.recorder.gangs[("team", "gang")]
        results[variant.name] = (gang.nodes, measure(run, jobs, cluster)["gangs_in_one_domain"])
    assert results == {
        "kube-scheduler": (("a-2", "a-3", "b-0", "b-1"), 0),
        "extender": (("b-0", "b-1", "b-2", "b-3"), 1),
    }


def test_two_competing_gangs_are_never_partial_with_the_extender(tmp_path: Path) -> None:
    # 8 nodes; two gangs of 6 x 8 GPUs arrive together: only one fits at a time.
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(8)])
    jobs = [job("first", 6, 8, arrival=1.0), job("second", 6, 8, arrival=1.001)]
    plain = measure(simulate(cluster, jobs, PLAIN, Settings()), jobs, cluster)
    extender = measure(simulate(cluster, jobs, EXTENDER, Settings()), jobs, cluster)
    assert extender["jobs_placed"] == plain["jobs_placed"] == 2
    assert extender["partial_gangs"] == {"gangs": 0, "max_at_once": 0, "idle_gpu_hours": 0.0}
    # The plain scheduler binds 2 of the second gang's pods, which hold 16 GPUs for the hour
    # the first gang runs.
    assert plain["partial_gangs"]["gangs"] == 1
    assert 16.0 <= plain["partial_gangs"]["idle_gpu_hours"] < 16.1


def test_affinity_weights_buy_pix_and_binpack_weights_buy_full_nodes(tmp_path: Path) -> None:
    # "good" nodes are empty and pair each GPU with a NIC of its own (PIX); on "far" nodes
    # every NIC is across the host bridge (NODE), and half their GPUs are in use. Binpack
    # wants the half-full far nodes, affinity the good ones.
    board = hgx()
    far_board = board.model_copy(
        update={"pairs": tuple(p.model_copy(update={"level": Level.NODE}) for p in board.pairs)}
    )
    good = [node(f"good-{i}", board) for i in range(4)]
    far = [node(f"far-{i}", far_board) for i in range(4)]
    busy = [running(f"busy-{i}", f"far-{i}", 4) for i in range(4)]
    cluster = snapshot(tmp_path, good + far + busy)
    jobs = [job(f"job-{i}", 1, 4, arrival=10.0 * (i + 1)) for i in range(4)]
    affinity = Variant("affinity", Weights(affinity=10, rate=0, binpack=0, locality=0))
    binpack = Variant("binpack", Weights(affinity=0, rate=0, binpack=10, locality=0))
    levels = {
        v.name: measure(simulate(cluster, jobs, v, Settings()), jobs, cluster)["gpu_nic_levels"]
        for v in (affinity, binpack)
    }
    assert levels == {
        "affinity": {"PIX": 16, "PXB": 0, "PHB": 0, "NODE": 0, "SYS": 0, "none": 0},
        "binpack": {"PIX": 0, "PXB": 0, "PHB": 0, "NODE": 16, "SYS": 0, "none": 0},
    }


def test_a_pod_that_never_fits_is_reported_with_its_reason(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(2)])
    jobs = [job("small", 1, 8, arrival=1.0), job("huge", 1, 16, arrival=2.0)]
    result = measure(simulate(cluster, jobs, PLAIN, Settings(patience=600.0)), jobs, cluster)
    assert result["jobs_placed"] == 1
    assert result["never_fit"] == [
        {
            "reason": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 "
            "nodes are available: 2 No preemption victims found for incoming pod.",
            "pods": 1,
        }
    ]
