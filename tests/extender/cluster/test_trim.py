"""What the cache keeps of each object (cluster/trim.py): exactly the fields the extender reads,
and every answer the same as from whole objects, gangs included."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import pytest

from extender.cluster.model import Cluster
from extender.cluster.owners import PYTORCH_JOBS, Owners
from extender.cluster.snapshot import SnapshotSource
from extender.cluster.trim import trim_node, trim_pod, trim_workload
from extender.gangs.planner import GangSettings
from extender.scheduling import Scheduler
from extender.weights import Weights
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS
from testbed.clustergen import ClusterSpec, generate

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]
NODE_SETTINGS_ENV = {
    "name": "NCCL_IB_HCA",
    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{keys.HCA}']"}},
}
WHOLE_POD: Json = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "w-0",
        "namespace": "team-a",
        "uid": "u1",
        "resourceVersion": "7",
        "creationTimestamp": "2024-06-03T00:00:00Z",
        "labels": {"app": "train"},
        "annotations": {
            keys.GANG: "g",
            "kubectl.kubernetes.io/last-applied-configuration": "{...}",
            "k8s.v1.cni.cncf.io/network-status": "[...]",
        },
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "c"},
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "j",
                "uid": "u2",
                "controller": True,
                "blockOwnerDeletion": True,
            },
        ],
        "managedFields": MANAGED,
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "pytorch",
                "env": [{"name": "RANK", "value": "0"}, NODE_SETTINGS_ENV],
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
                "volumeMounts": [{"name": "token", "mountPath": "/var/run"}],
            }
        ],
        "initContainers": [{"name": "init", "image": "busybox"}],
        "nodeName": "n1",
        "tolerations": [{"key": "x", "operator": "Exists"}],
        "nodeSelector": {"pool": "a"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
                "preferredDuringSchedulingIgnoredDuringExecution": [],
            },
            "podAntiAffinity": {},
        },
        "volumes": [{"name": "token", "projected": {}}],
    },
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_a_pod_keeps_what_the_extender_reads() -> None:
    assert trim_pod(WHOLE_POD) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "w-0",
            "namespace": "team-a",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"app": "train"},
            "annotations": {keys.GANG: "g"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "j",
                    "uid": "u2",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    "env": [NODE_SETTINGS_ENV],
                }
            ],
            "initContainers": [{"name": "init"}],
            "nodeName": "n1",
            "nodeSelector": {"pool": "a"},
            "tolerations": [{"key": "x", "operator": "Exists"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            },
        },
        "status": {"phase": "Running"},
    }


def test_a_pending_pod_with_bare_metadata() -> None:
    assert trim_pod({"metadata": {"name": "p"}, "spec": {"containers": []}}) == {
        "metadata": {"name": "p"},
        "spec": {},
    }


TAINTS = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": None}]


def test_a_node_keeps_its_labels_topology_allocatable_taints_and_readiness() -> None:
    whole = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "n1",
            "resourceVersion": "3",
            "labels": {keys.LEAF: "l1"},
            "annotations": {keys.TOPOLOGY: "{}", "node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": MANAGED,
        },
        "spec": {"podCIDR": "10.0.0.0/24", "unschedulable": True, "taints": TAINTS},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "capacity": {"nvidia.com/gpu": "8"},
            "images": [{"names": ["pytorch"], "sizeBytes": 1}],
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "x"},
                {"type": "FrequentKernelDeadlock", "status": "False"},
            ],
        },
    }
    assert trim_node(whole) == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "n1",
            "resourceVersion": "3",
            "labels": {keys.LEAF: "l1"},
            "annotations": {keys.TOPOLOGY: "{}"},
        },
        "spec": {"unschedulable": True, "taints": TAINTS},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "False"}],
        },
    }


def test_a_workload_loses_its_managed_fields_and_status() -> None:
    whole = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "uid": "u", "managedFields": MANAGED},
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {"conditions": []},
    }
    assert trim_workload(whole) == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "uid": "u"},
        "spec": {"pytorchReplicaSpecs": {}},
    }


def test_trimming_leaves_the_object_it_was_given_alone() -> None:
    whole = copy.deepcopy(WHOLE_POD)
    trim_pod(whole)
    assert whole == WHOLE_POD


@dataclass
class WholeSource:
    """The model fed whole objects, as before trimming."""

    cluster: Cluster = field(default_factory=Cluster)
    owners: Owners = field(default_factory=Owners)

    def ready(self) -> bool:
        return True

    async def run(self) -> None:
        return None

    async def read_pod(self, namespace: str, name: str) -> Json | None:
        return self.cluster.pod(namespace, name)

    async def bind(self, *_: object) -> None:
        raise NotImplementedError

    async def reserve_claims(self, *_: object) -> None:
        raise NotImplementedError


def pytorch_jobs(pods: list[Json]) -> list[Json]:
    """The PyTorchJob of every job with pending pods, whole: managedFields and status."""
    jobs: dict[str, Json] = {}
    for pod in (p for p in pods if p["status"]["phase"] == "Pending"):
        ref, meta = pod["metadata"]["ownerReferences"][0], pod["metadata"]
        job = jobs.setdefault(ref["name"], _job(ref, meta["namespace"], pod["spec"]))
        replicas = job["spec"]["pytorchReplicaSpecs"]
        replicas["Worker" if "worker" in meta["name"] else "Master"]["replicas"] += 1
    return list(jobs.values())


def _job(ref: Json, namespace: str, pod_spec: Json) -> Json:
    template = {"spec": {"containers": pod_spec["containers"]}}
    specs = {role: {"replicas": 0, "template": template} for role in ("Master", "Worker")}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": ref["name"], "namespace": namespace, "uid": ref["uid"]},
        "spec": {"pytorchReplicaSpecs": specs},
        "status": {"conditions": [{"type": "Created", "status": "True"}]},
    }


@pytest.fixture(scope="module")
def served() -> list[Json]:
    spec = ClusterSpec(nodes=96, seed=5, served=True, daemon_pods_per_node=2, cpu_pods=30)
    objects = generate(spec)
    return [*objects, *pytorch_jobs([o for o in objects if o["kind"] == "Pod"])]


def sources(objects: list[Json]) -> tuple[WholeSource, SnapshotSource]:
    whole = WholeSource()
    whole.cluster.replace_nodes(o for o in objects if o["kind"] == "Node")
    whole.cluster.replace_pods(o for o in objects if o["kind"] == "Pod")
    whole.owners.replace(PYTORCH_JOBS, [o for o in objects if o["kind"] == "PyTorchJob"])
    return whole, SnapshotSource(copy.deepcopy(objects))


def test_every_answer_is_the_same_as_from_whole_objects(served: list[Json]) -> None:
    whole_source, trimmed_source = sources(served)
    assert dict(trimmed_source.cluster.views) == dict(whole_source.cluster.views)
    settings = (GangSettings(), ("nvidia.com/gpu",), DEFAULT_RDMA_PATTERNS)
    whole = Scheduler(whole_source, Weights, *settings)
    trimmed = Scheduler(trimmed_source, Weights, *settings)
    names = [o["metadata"]["name"] for o in served if o["kind"] == "Node"]
    pods = [o for o in served if o["kind"] == "Pod"]
    pending = [p for p in pods if p["status"]["phase"] == "Pending"]
    assert {type(whole.gang(p)).__name__ for p in pending} == {"Gang"}
    for pod in [*pending, *pods[::25]]:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        assert trimmed.explain(namespace, name) == whole.explain(namespace, name), name
        assert trimmed.filter(pod, names) == whole.filter(pod, names), name
        assert trimmed.prioritize(pod, names) == whole.prioritize(pod, names), name


def without_default_tolerations(obj: Json) -> Json:
    spec = obj.get("spec") or {}
    kept = [t for t in spec.get("tolerations", []) if t.get("tolerationSeconds") != 300]
    if "tolerations" not in spec:
        return obj
    return {
        **obj,
        "spec": {
            **{k: v for k, v in spec.items() if k != "tolerations"},
            **({"tolerations": kept} if kept else {}),
        },
    }


def test_serving_adds_nothing_the_extender_reads_but_tolerations_and_priority() -> None:
    """The apiserver's additions to the generated objects are all trimmed away, but for the
    tolerations of not-ready and unreachable nodes that admission (DefaultTolerationSeconds)
    adds, which TaintToleration reads, and the priority its Priority admission plugin fills in
    from a PriorityClass (here the DaemonSet pods' system-node-critical), which preemption
    reads; the priority's defaults (0, may preempt) are trimmed as if absent; and when a bound
    pod was scheduled (its PodScheduled condition's time), which explain shows."""
    spec = ClusterSpec(nodes=32, seed=2, daemon_pods_per_node=2, cpu_pods=10)
    plain, full = generate(spec), generate(replace(spec, served=True))
    trim = {"Node": trim_node, "Pod": trim_pod}
    served = [trim[o["kind"]](o) for o in full]
    priorities = {o["spec"].pop("priority", None) for o in served if o["kind"] == "Pod"}
    assert priorities == {None, 2000001000}
    scheduled = [o["status"].pop("conditions", []) for o in served if o["kind"] == "Pod"]
    assert {c["type"] for conditions in scheduled for c in conditions} == {"PodScheduled"}
    assert [without_default_tolerations(o) for o in served] == [trim[o["kind"]](o) for o in plain]
    assert served[-1]["spec"]["tolerations"][-2:] == [
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute"}
        | {"tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")
    ]
