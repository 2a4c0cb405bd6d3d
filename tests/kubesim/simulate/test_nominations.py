"""Gang members nominated to their planned nodes (`Settings.nominate_members`), with
kube-scheduler's adaptive percentage of nodes to find: the emulated kube-scheduler tries each
member's nominated node first, so the gang binds whole though its planned nodes are mostly
outside the sample of nodes a search would send; most members' cycles send one name."""

from __future__ import annotations

from pathlib import Path

from extender.weights import DEFAULT
from kubesim.scheduler import Job
from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Settings, Variant, scheduler_config, simulate
from testbed.clustergen import ClusterSpec, generate, write_snapshot

NODES = 1000
GANGS = [Job(f"gang-{i}", "team-a", 8, 8, arrival=0.0, duration=3600.0) for i in range(6)]


def test_nominated_gangs_bind_whole_from_one_name_a_member(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    spec = ClusterSpec(nodes=NODES, seed=7, link_layer="Ethernet", busy_fraction=0.5)
    write_snapshot(generate(spec), path)
    cluster = load_cluster(path)
    settings = Settings(cycle=0.002, patience=60.0, nominate_members=True)
    variant = Variant("extender", DEFAULT)
    assert scheduler_config(variant, settings).percentage_of_nodes_to_score is None  # adaptive
    run = simulate(cluster, GANGS, variant, settings)
    result = measure(run, GANGS, cluster)
    assert result["jobs_placed"] == len(GANGS)
    assert result["partial_gangs"]["gangs"] == 0
    bound = [b for b in run.emulator.binds if b.ok]
    assert len(bound) == 8 * len(GANGS)
    placed = [a for a in run.emulator.attempts if a.outcome == "assumed"]
    one_name = [a for a in placed if a.sampled == 1]
    # Each gang's first member searches (a sample of 420 of the 1,000 nodes); the others go
    # to the node they were nominated to.
    assert len(one_name) >= 7 * len(GANGS)
