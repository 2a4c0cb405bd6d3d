"""A pod's gang read off its owner, through ownerReferences checked by uid, and where that
comes among the other ways a pod names its gang."""

# ruff: noqa: E501 (a table of exact outcomes reads best one case per line)

from __future__ import annotations

import pytest

from extender.cluster.owners import (
    BATCH_JOBS,
    JOBSETS,
    MPI_JOBS,
    PYTORCH_JOBS,
    Owners,
    WorkloadResource,
)
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.ownership import owner_gang
from kube_rdma.core.objects import Json

GPU_POD = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
CPU_POD: Json = {"spec": {"containers": [{}]}}


def needs(template: Json) -> bool:
    return template is GPU_POD


def ref(resource: WorkloadResource | str, name: str, uid: str) -> Json:
    api_version, kind = (
        (resource.api_version, resource.kind)
        if isinstance(resource, WorkloadResource)
        else ("apps/v1", resource)
    )
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def obj(
    name: str,
    uid: str,
    spec: Json | None = None,
    owner: Json | None = None,
    labels: Json | None = None,
) -> Json:
    meta: Json = {"name": name, "namespace": "team-a", "uid": uid, "labels": labels or {}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Other", "name": "x"}, owner]
    return {"metadata": meta, "spec": spec or {}}


def store() -> Owners:
    owners = Owners()
    owners.replace(
        PYTORCH_JOBS,
        [
            obj(
                "llama",
                "u-llama",
                {
                    "pytorchReplicaSpecs": {
                        "Master": {"replicas": 1, "template": GPU_POD},
                        "Worker": {"replicas": 15, "template": GPU_POD},
                    }
                },
            )
        ],
    )
    owners.replace(
        MPI_JOBS,
        [
            obj(
                "bert",
                "u-bert",
                {
                    "mpiReplicaSpecs": {
                        "Launcher": {"template": CPU_POD},
                        "Worker": {"replicas": 4, "template": GPU_POD},
                    }
                },
            )
        ],
    )
    qwen = {
        "replicatedJobs": [
            {"name": "initializer", "template": {"spec": {"template": CPU_POD}}},
            {
                "name": "node",
                "replicas": 1,
                "template": {"spec": {"parallelism": 4, "template": GPU_POD}},
            },
        ]
    }
    owners.replace(
        JOBSETS,
        [
            obj(
                "qwen",
                "u-qwen",
                qwen,
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "qwen",
                    "controller": True,
                },
            ),
            obj("solo", "u-solo", qwen),
        ],
    )
    owners.replace(BATCH_JOBS, [
        obj("qwen-node-0", "u-qn", {}, ref(JOBSETS, "qwen", "u-qwen")),
        obj("qwen-initializer-0", "u-qi", {}, ref(JOBSETS, "qwen", "u-qwen")),
        obj("solo-node-0", "u-sn", {}, ref(JOBSETS, "solo", "u-solo")),
        obj("bert-launcher", "u-bl", {}, ref(MPI_JOBS, "bert", "u-bert")),
        obj("indexed", "u-ix", {"completionMode": "Indexed", "parallelism": 3, "template": GPU_POD}),
        obj("plain", "u-pl", {"parallelism": 3, "template": GPU_POD}),
    ])  # fmt: skip
    return owners


def pod(owner: Json | None, labels: Json | None = None, annotations: Json | None = None) -> Json:
    p = obj("p", "u-p", GPU_POD["spec"], owner, labels)
    p["metadata"]["annotations"] = annotations or {}
    return p


TYPE, RJOB = "training.kubeflow.org/replica-type", "jobset.sigs.k8s.io/replicatedjob-name"
ROLE = "training.kubeflow.org/job-role"
QWEN = "TrainJob qwen, JobSet qwen: 4 node (initializer not counted: no GPU or RDMA)"
CASES = [
    ("pytorchjob", pod(ref(PYTORCH_JOBS, "llama", "u-llama"), {TYPE: "worker"}),
     Gang("team-a", "llama", 16, "PyTorchJob llama: 1 Master + 15 Worker")),
    ("pytorchjob-newer-uid", pod(ref(PYTORCH_JOBS, "llama", "u-old"), {TYPE: "worker"}),
     Singleton("its owner PyTorchJob llama (uid u-old) is not in the extender's cache; scheduled alone")),
    ("pytorchjob-missing", pod(ref(PYTORCH_JOBS, "gone", "u-gone"), {TYPE: "worker"}),
     Singleton("its owner PyTorchJob gone (uid u-gone) is not in the extender's cache; scheduled alone")),
    ("mpijob-worker", pod(ref(MPI_JOBS, "bert", "u-bert"), {ROLE: "worker"}), Gang("team-a", "bert", 4, "MPIJob bert: 4 Worker")),
    ("mpijob-v1-worker", pod(ref(MPI_JOBS, "bert", "u-bert"), {TYPE: "worker"}), Gang("team-a", "bert", 4, "MPIJob bert: 4 Worker")),
    ("mpijob-launcher", pod(ref(BATCH_JOBS, "bert-launcher", "u-bl"), {TYPE: "launcher"}),
     Singleton("the launcher of MPIJob bert, whose gang is its Workers")),
    ("trainjob-node", pod(ref(BATCH_JOBS, "qwen-node-0", "u-qn"), {RJOB: "node"}), Gang("team-a", "qwen", 4, QWEN)),
    ("trainjob-initializer", pod(ref(BATCH_JOBS, "qwen-initializer-0", "u-qi"), {RJOB: "initializer"}),
     Singleton(f"not counted in gang team-a/qwen ({QWEN})")),
    ("jobset", pod(ref(BATCH_JOBS, "solo-node-0", "u-sn"), {RJOB: "node"}),
     Gang("team-a", "solo", 4, "JobSet solo: 4 node (initializer not counted: no GPU or RDMA)")),
    ("indexed-job", pod(ref(BATCH_JOBS, "indexed", "u-ix")), Gang("team-a", "indexed", 3, "Indexed Job indexed: parallelism 3")),
    ("non-indexed-job", pod(ref(BATCH_JOBS, "plain", "u-pl")), Singleton()),
    ("crd-absent", pod(ref(WorkloadResource("batch.volcano.sh", "v1alpha1", "jobs", "Job"), "vc", "u-vc")),
     Singleton("its owner Job vc is unknown: jobs.batch.volcano.sh is not listed (is its CRD installed?); scheduled alone")),
    ("replicaset", pod(ref("ReplicaSet", "web-5d8f", "u-rs")), None),
    ("no-owner", pod(None), None),
]  # fmt: skip


@pytest.mark.parametrize(("p", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_owner_gang(p: Json, expected: Gang | Singleton | None) -> None:
    assert owner_gang(p, store(), needs) == expected


def gang(p: Json) -> Gang | Singleton:
    return gang_of(p, lambda group, namespace, name: 6, lambda pod: owner_gang(pod, store(), needs))


LLAMA = ref(PYTORCH_JOBS, "llama", "u-llama")
PRECEDENCE = [
    ("our-keys-first", pod(LLAMA, {TYPE: "worker"}, {"kube-rdma.io/gang": "g", "kube-rdma.io/gang-size": "2"}), Gang("team-a", "g", 2, "kube-rdma.io/gang")),
    ("podgroup-next", pod(LLAMA, {TYPE: "worker", "scheduling.x-k8s.io/pod-group": "llama"}), Gang("team-a", "llama", 6, "PodGroup scheduling.x-k8s.io")),
    ("job-label-with-size", pod(LLAMA, {TYPE: "worker", "training.kubeflow.org/job-name": "llama"}, {"kube-rdma.io/gang-size": "3"}), Gang("team-a", "llama", 3, "Kubeflow job")),
    ("then-the-owner", pod(LLAMA, {TYPE: "worker", "training.kubeflow.org/job-name": "llama"}), Gang("team-a", "llama", 16, "PyTorchJob llama: 1 Master + 15 Worker")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("p", "expected"), [c[1:] for c in PRECEDENCE], ids=[c[0] for c in PRECEDENCE]
)
def test_explicit_keys_and_podgroups_come_before_the_owner(
    p: Json, expected: Gang | Singleton
) -> None:
    assert gang(p) == expected
