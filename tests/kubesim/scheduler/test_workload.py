"""The job stream: deterministic and shaped like a training cluster's; a job's exact pods."""

from __future__ import annotations

import orjson

from kube_rdma.core import keys
from kubesim.scheduler import GPU, RDMA, Job, Workload, applied


def test_workload_is_a_deterministic_realistic_stream() -> None:
    jobs = Workload(seed=7, jobs=400).stream()
    assert jobs == Workload(seed=7, jobs=400).stream()
    assert jobs != Workload(seed=8, jobs=400).stream()
    arrivals = [j.arrival for j in jobs]
    assert arrivals == sorted(arrivals)
    assert 250 < arrivals[-1] < 550  # 400 arrivals 1 s apart on average
    gangs = [j for j in jobs if j.gang]
    singles = [j for j in jobs if not j.gang]
    assert 150 < len(gangs) < 250
    assert {j.gpus for j in gangs} == {8}
    assert {j.members for j in gangs} <= {2, 4, 8, 16, 32, 64}
    assert {j.gpus for j in singles} <= {1, 2, 4, 8}
    sizes = [j.members for j in gangs]
    assert sizes.count(2) > sizes.count(16) > sizes.count(64)
    assert all(10.0 <= j.duration <= 60.0 for j in jobs)


def test_a_gang_pod_carries_what_the_webhook_and_a_job_controller_put_there() -> None:
    job = Job("gang-0003", "team-llm", members=16, gpus=8, arrival=1.5, duration=30.0)
    pods = job.pods("kube-rdma-scheduler")
    assert [p["metadata"]["name"] for p in pods] == [f"gang-0003-{i:02d}" for i in range(16)]
    amounts = {"cpu": "128", "memory": "1024Gi", GPU: "8", RDMA: "1"}
    assert pods[5] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gang-0003-05",
            "namespace": "team-llm",
            "labels": {
                "batch.kubernetes.io/job-name": "gang-0003",
                "batch.kubernetes.io/job-completion-index": "5",
            },
            "annotations": {
                keys.APPLIED: applied("macvlan"),
                keys.GANG: "gang-0003",
                keys.GANG_SIZE: "16",
            },
        },
        "spec": {
            "schedulerName": "kube-rdma-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": amounts, "requests": amounts},
                }
            ],
            "priority": 0,
        },
        "status": {"phase": "Pending"},
    }
    assert orjson.loads(applied("macvlan"))["network"] == "macvlan"
    single = Job("job-0004", "team-llm", members=1, gpus=2, arrival=2.0, duration=5.0)
    assert keys.GANG not in single.pods()[0]["metadata"]["annotations"]
    urgent = Job("job-0005", "prod", 1, 8, 0.0, 5.0, priority=1000, preemption_policy="Never")
    assert (urgent.pod("job-0005-00")["spec"] | {"containers": []}) == {
        "schedulerName": "default-scheduler",
        "restartPolicy": "Never",
        "containers": [],
        "priority": 1000,
        "preemptionPolicy": "Never",
    }
