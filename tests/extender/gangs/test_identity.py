"""Which gang a pod belongs to, from kube-rdma's keys and the ecosystem's."""

# ruff: noqa: E501 (a table of exact messages reads best one case per line)

from __future__ import annotations

import pytest

from extender.gangs.identity import Gang, Singleton, gang_of

Json = dict[str, object]
PODGROUPS = {
    ("scheduling.x-k8s.io", "team-a", "llama"): 16,
    ("scheduling.volcano.sh", "team-a", "gpt-moe-9c1e2f"): 8,
}


def size(group: str, namespace: str, name: str) -> int | None:
    return PODGROUPS.get((group, namespace, name))


def pod(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Json:
    return {
        "metadata": {
            "name": "p",
            "namespace": "team-a",
            "labels": labels or {},
            "annotations": annotations or {},
        }
    }


CASES = [
    ("ours", pod(annotations={"kube-rdma.io/gang": "llama", "kube-rdma.io/gang-size": "16"}),
     Gang("team-a", "llama", 16, "kube-rdma.io/gang")),
    ("ours-as-labels", pod(labels={"kube-rdma.io/gang": "llama", "kube-rdma.io/gang-size": "4"}),
     Gang("team-a", "llama", 4, "kube-rdma.io/gang")),
    ("ours-no-size", pod(annotations={"kube-rdma.io/gang": "llama"}),
     Singleton("gang team-a/llama (kube-rdma.io/gang): kube-rdma.io/gang-size is missing; scheduled alone")),
    ("ours-bad-size", pod(annotations={"kube-rdma.io/gang": "llama", "kube-rdma.io/gang-size": "many"}),
     Singleton("gang team-a/llama (kube-rdma.io/gang): kube-rdma.io/gang-size='many' is not a positive number; scheduled alone")),
    ("size-one", pod(annotations={"kube-rdma.io/gang": "solo", "kube-rdma.io/gang-size": "1"}), Singleton()),
    ("coscheduling", pod(labels={"scheduling.x-k8s.io/pod-group": "llama"}),
     Gang("team-a", "llama", 16, "PodGroup scheduling.x-k8s.io")),
    ("volcano-annotation", pod(annotations={"scheduling.k8s.io/group-name": "gpt-moe-9c1e2f"}),
     Gang("team-a", "gpt-moe-9c1e2f", 8, "PodGroup scheduling.volcano.sh")),
    ("volcano-missing-podgroup", pod(labels={"scheduling.volcano.sh/group-name": "nope"}),
     Singleton("gang team-a/nope (PodGroup scheduling.volcano.sh): no PodGroup nope with spec.minMember; scheduled alone")),
    ("kueue", pod(labels={"kueue.x-k8s.io/pod-group-name": "g"}, annotations={"kueue.x-k8s.io/pod-group-total-count": "3"}),
     Gang("team-a", "g", 3, "Kueue pod group")),
    ("koordinator", pod(annotations={"gang.scheduling.koordinator.sh/name": "k", "gang.scheduling.koordinator.sh/min-available": "5"}),
     Gang("team-a", "k", 5, "Koordinator gang")),
    ("kubeflow-without-size", pod(labels={"training.kubeflow.org/job-name": "llama"}),
     Singleton("gang team-a/llama (Kubeflow job): neither a PodGroup label, kube-rdma.io/gang-size nor a known owner gives its size; scheduled alone")),
    ("kubeflow-with-podgroup", pod(labels={"training.kubeflow.org/job-name": "x", "scheduling.x-k8s.io/pod-group": "llama"}),
     Gang("team-a", "llama", 16, "PodGroup scheduling.x-k8s.io")),
    ("jobset-with-size", pod(labels={"jobset.sigs.k8s.io/jobset-name": "qwen"}, annotations={"kube-rdma.io/gang-size": "2"}),
     Gang("team-a", "qwen", 2, "JobSet")),
    ("plain", pod(), Singleton()),
]  # fmt: skip


@pytest.mark.parametrize(("p", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gang_of(p: Json, expected: Gang | Singleton) -> None:
    assert gang_of(p, size) == expected
