"""DRA clusters simulated end to end: pods whose GPUs and NICs come from claims made from a
template of GPU-NIC pairs, allocated by the emulated DynamicResources plugin in the simulated
apiserver, followed by the extender's model, deleted with their pods. Every figure is read off
the store: the claims each bound pod has, where they are allocated, whom they are reserved for."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from extender.cluster.claims import allocated_node, claim_names
from extender.weights import DEFAULT
from kubesim.scheduler import Job, bound_node, pod_key
from kubesim.simulate.claim_jobs import ClaimJob, pair_template
from kubesim.simulate.dra import allocated_devices
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Run, Settings, Variant, simulate
from kubesim.simulate.workload import Shape, parse_generate
from testbed.clustergen.dra import dra_form
from tests.kubesim.simulate.clusters import job, leaf_node, snapshot

PLAIN = Variant("kube-scheduler", None)
EXTENDER = Variant("extender", DEFAULT)
INF = float("inf")
RUN = 300.0
"""Seconds each job runs: short, so that the churn of a waiting gang stays short too."""


def claim_job(name: str, pods: int, arrival: float, gpus: int = 8) -> ClaimJob:
    return ClaimJob(**dataclasses.asdict(job(name, pods, gpus, arrival, RUN)))


def claims_of_bound_pods(run: Run) -> dict[str, tuple[str, list[str], int, int]]:
    """Each bound pod with claims: its node, the nodes its claims are allocated on, and how
    many of its claims are reserved for it (by uid) and for anyone."""
    assert run.dra is not None
    claims = run.dra.claims()
    found = {}
    for pod in run.emulator.informer.pods():
        if not bound_node(pod) or not (pod.get("spec") or {}).get("resourceClaims"):
            continue
        namespace, name = pod_key(pod)
        names, unknown = claim_names(pod)
        assert unknown == []
        held = [claims[namespace, n] for n in names]
        uid = pod["metadata"]["uid"]
        mine = sum([e["uid"] for e in c["status"].get("reservedFor") or []] == [uid] for c in held)
        found[name] = (
            str(bound_node(pod)),
            [str(allocated_node(c)) for c in held],
            mine,
            len(held),
        )
    return found


def devices_held(run: Run) -> list[tuple[str, str, str]]:
    assert run.dra is not None
    return sorted(d for c in run.dra.claims().values() for d in allocated_devices(c))


@pytest.mark.parametrize("variant", [PLAIN, EXTENDER], ids=lambda v: v.name)
def test_gangs_of_claim_pods_get_their_claims_and_free_them_when_they_end(
    tmp_path: Path, variant: Variant
) -> None:
    # 4 DRA nodes of 8 GPU-NIC pairs; two gangs of 2 x 8 pairs fill them, and a third fits
    # only once one of them has run and its claims are gone.
    cluster = snapshot(tmp_path, dra_form([leaf_node(f"n-{i}", "a") for i in range(4)]))
    assert (cluster.gpus(), cluster.shape().gpus) == (32, 32)
    jobs: list[Job] = [
        claim_job(name, 2, at) for name, at in (("first", 10.0), ("second", 20.0), ("third", 30.0))
    ]
    run = simulate(cluster, jobs, variant, Settings())
    assert run.emulator.jobs is not None
    states = run.emulator.jobs.states()
    assert all(s.run == 1 and s.disruptions == 0 for s in states)
    starts = sorted((s.first_started or INF, s.job.name) for s in states)
    # The last gang placed had to wait for the first placed to end: its devices are reused.
    assert starts[0][0] + RUN <= starts[2][0] < INF
    # A job that has run its time is gone with its claims; every pod still running has its
    # one claim allocated on its node and reserved for it alone, 8 GPUs and 8 NICs each, no
    # device twice.
    running = [name for start, name in starts if start + RUN > run.end]
    placed = claims_of_bound_pods(run)
    assert sorted(placed) == sorted(f"{job}-{i:02d}" for job in running for i in range(2))
    assert [c[1:] for c in placed.values()] == [([c[0]], 1, 1) for c in placed.values()]
    assert len({c[0] for c in placed.values()}) == len(placed)
    assert run.dra is not None
    assert sorted(n.split("-gpu-nic-")[0] for _, n in run.dra.claims()) == sorted(placed)
    held = devices_held(run)
    assert len(held) == len(set(held)) == 16 * len(placed)
    assert measure(run, jobs, cluster)["dra"] == {
        "pods_bound": 6,
        "pods_bound_with_claims_reserved": 6,
        "pods_bound_unreserved": 0,
        "devices_double_allocated": 0,
        "problems": [],
    }


@pytest.mark.parametrize("variant", [PLAIN, EXTENDER], ids=lambda v: v.name)
def test_a_mixed_cluster_runs_claim_pods_on_dra_nodes_and_the_others_on_device_plugins(
    tmp_path: Path, variant: Variant
) -> None:
    # p-0 and p-1 keep their device plugins; d-0 and d-1 publish slices. A gang of each kind
    # arrives: each can only go where its kind of devices is.
    # The GPU class serves no `nvidia.com/gpu` (`extendedResourceName`, KEP-5004): a cluster
    # without that alpha feature, whose apiserver drops the field.
    nodes = [leaf_node(name, "a") for name in ("d-0", "d-1", "p-0", "p-1")]
    objects = dra_form(nodes, nodes=["d-0", "d-1"])
    for obj in objects:
        if obj["kind"] == "DeviceClass":
            obj["spec"].pop("extendedResourceName", None)
    cluster = snapshot(tmp_path, objects)
    assert (cluster.gpus(), cluster.shape().gpus) == (32, 32)
    jobs = [claim_job("claims", 2, 10.0), job("plugins", 2, 8, 10.001, RUN)]
    run = simulate(cluster, jobs, variant, Settings())
    gangs = run.emulator.recorder.gangs
    assert (gangs[("team", "claims")].nodes, gangs[("team", "plugins")].nodes) == (
        ("d-0", "d-1"),
        ("p-0", "p-1"),
    )
    assert claims_of_bound_pods(run) == {
        "claims-00": ("d-0", ["d-0"], 1, 1),
        "claims-01": ("d-1", ["d-1"], 1, 1),
    }
    measured = measure(run, jobs, cluster)
    assert (measured["jobs_placed"], measured["dra"]) == (
        2,
        {
            "pods_bound": 2,
            "pods_bound_with_claims_reserved": 2,
            "pods_bound_unreserved": 0,
            "devices_double_allocated": 0,
            "problems": [],
        },
    )


def test_a_claim_job_pod_names_its_template_and_requests_no_devices() -> None:
    [made] = claim_job("solo", 1, 0.0, gpus=2).pods()
    assert (made["spec"]["resourceClaims"], made["spec"]["containers"][0]["resources"]) == (
        [{"name": "gpu-nic", "resourceClaimTemplateName": "gpu-nic-2"}],
        {"limits": {}, "requests": {}, "claims": [{"name": "gpu-nic"}]},
    )
    assert pair_template("team", 2, "gpu.nvidia.com", "dranet") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-nic-2", "namespace": "team"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu-0", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
                        {"name": "nic-0", "exactly": {"deviceClassName": "dranet"}},
                        {"name": "gpu-1", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
                        {"name": "nic-1", "exactly": {"deviceClassName": "dranet"}},
                    ],
                    "constraints": [
                        {
                            "requests": ["gpu-0", "nic-0"],
                            "matchAttribute": "resource.kubernetes.io/pcieRoot",
                        },
                        {
                            "requests": ["gpu-1", "nic-1"],
                            "matchAttribute": "resource.kubernetes.io/pcieRoot",
                        },
                    ],
                }
            }
        },
    }


def test_a_share_of_generated_jobs_ask_through_claims_and_the_jobs_stay_the_same() -> None:
    shape = Shape(256, 32, "rdma/hca")
    plain = parse_generate("jobs=20,seed=1").stream(shape)
    mixed = parse_generate("jobs=20,seed=1,dra=0.5").stream(shape)
    assert [dataclasses.astuple(j) for j in mixed] == [dataclasses.astuple(j) for j in plain]
    assert [j.name for j in mixed if isinstance(j, ClaimJob)] == [
        "job-0000", "job-0005", "job-0006", "job-0007", "job-0008", "job-0010",
        "job-0011", "job-0012", "job-0015", "job-0016", "gang-0017", "job-0019",
    ]  # fmt: skip


@pytest.mark.parametrize("variant", [PLAIN, EXTENDER], ids=lambda v: v.name)
def test_pods_asking_for_gpus_by_name_go_to_nodes_whose_gpus_a_device_class_serves(
    tmp_path: Path, variant: Variant
) -> None:
    # `make demo`'s gpu-07 and gpu-08: d-0 and d-1 publish their GPUs through DRA only, and the
    # GPU class serves them as `nvidia.com/gpu` (`extendedResourceName`, KEP-5004); their NICs
    # stay with the device plugin, as do p-0's GPUs. A gang of 3 x 8 GPUs needs all three. The
    # emulated kube-scheduler once refused d-0 and d-1 ("Insufficient nvidia.com/gpu") and sent
    # the extender p-0 alone, where the extender, rightly, planned the gang on all three: "kube-
    # scheduler ruled out planned node d-0", then d-1, planned again and again, never placed.
    # A 4-GPU pod then fits only once the gang has run: what the gang's pods ask for by name
    # holds the class's devices.
    nodes = [leaf_node(name, "a") for name in ("d-0", "d-1", "p-0")]
    cluster = snapshot(tmp_path, dra_form(nodes, nodes=["d-0", "d-1"], nics=False))
    assert (cluster.gpus(), cluster.shape().gpus) == (24, 24)
    jobs = [job("gang", 3, 8, 10.0, RUN), job("after", 1, 4, 20.0, RUN)]
    run = simulate(cluster, jobs, variant, Settings())
    measured = measure(run, jobs, cluster)
    assert (measured["jobs_placed"], measured["never_fit"]) == (2, [])
    assert run.emulator.recorder.gangs[("team", "gang")].nodes == ("d-0", "d-1", "p-0")
    assert run.emulator.jobs is not None
    started = {s.job.name: s.first_started for s in run.emulator.jobs.states()}
    assert started["gang"] is not None
    assert started["after"] is not None
    assert started["gang"] + RUN <= started["after"]
