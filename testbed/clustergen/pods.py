"""Training pods placed onto the boards: running PyTorchJob gangs up to the busy fraction, a few
finished pods still bound, and pending gangs waiting for room."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import LinkLayer
from testbed.clustergen.hardware import Board, pod_address
from testbed.clustergen.identity import random_uid, stamp
from testbed.clustergen.spec import GPU, MULTUS_NETWORKS, RDMA_SHARED, ClusterSpec

# Pods: GPUs per pod (weights by job), members per job, CPU and memory per GPU.
POD_GPUS = (8, 4, 2, 1)
POD_GPU_WEIGHTS = (55, 20, 15, 10)
JOB_MEMBERS = {8: (1, 1, 2, 2, 4, 4, 8, 16, 32), 4: (1, 1, 2, 4), 2: (1, 1, 2), 1: (1, 1, 2)}
CPU_PER_GPU = 22
MEMORY_PER_GPU_GI = 200
TEAMS = ("team-llm", "team-vision", "team-speech", "team-recsys", "ml-research")
MODELS = ("llama3-70b", "llama3-8b", "mixtral-8x7b", "gpt-neox-20b", "vit-h14", "whisper-l")
IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
# Profiles as in examples/profiles.yaml; the hash stands in for the webhook's profile digest.
PROFILES: dict[tuple[LinkLayer, bool], tuple[str, str]] = {
    ("InfiniBand", False): ("default", "ib"),
    ("InfiniBand", True): ("ib-rails", "ib"),
    ("Ethernet", False): ("roce", "macvlan"),
    ("Ethernet", True): ("rails8", "macvlan"),
}


@dataclass(frozen=True)
class _Member:
    """One pod of a job: where it runs (None while pending) and its first GPU slot."""

    layer: LinkLayer
    node: Board | None
    slot: int
    gpus: int


class Pods:
    """Places training jobs onto the boards until `busy_fraction` of the GPUs are taken.

    A job is a PyTorchJob whose pods each take the same number of GPUs, as one aligned block of
    GPU slots (8 whole, 4 per socket, 2, 1), and whose per-rail RDMA resources are the rails of
    those slots. It starts at a random node and takes the next nodes of the same link layer, as
    a gang scheduler packing a job into a rack would.
    """

    def __init__(self, spec: ClusterSpec, boards: list[Board], rng: random.Random) -> None:
        self.spec, self.boards, self.rng = spec, boards, rng
        self.free = [(1 << b.gpus) - 1 for b in boards]
        self.ips = [1] * len(boards)
        self.jobs = 0
        self.version = 10_000 + len(boards)

    def all(self) -> list[Json]:
        return [*self._running(), *self._succeeded(), *self._pending()]

    def _running(self) -> list[Json]:
        target = round(self.spec.busy_fraction * sum(b.gpus for b in self.boards))
        used, largest, pods = 0, 8, []
        while used < target and largest:
            remaining = target - used
            gpus = self.rng.choices(POD_GPUS, POD_GPU_WEIGHTS)[0]
            gpus = min(gpus, largest, 1 << (remaining.bit_length() - 1))
            members = min(self.rng.choice(JOB_MEMBERS[gpus]), remaining // gpus)
            placed = self._place(gpus, members, self.rng.randrange(len(self.boards)))
            if not placed:
                largest = gpus // 2  # no node has such a block free any more
                continue
            used += gpus * len(placed)
            pods += self._job(placed, "Running")
        return pods

    def _place(self, gpus: int, members: int, start: int) -> list[_Member]:
        placed: list[_Member] = []
        n = len(self.boards)
        for step in range(n):
            board = self.boards[(start + step) % n]
            if placed and board.link_layer != placed[0].layer:
                continue
            while len(placed) < members and (slot := self._take(board, gpus)) is not None:
                placed.append(_Member(board.link_layer, board, slot, gpus))
            if len(placed) == members:
                break
        return placed

    def _take(self, board: Board, gpus: int) -> int | None:
        """The first free aligned block of `gpus` slots on the board, now taken."""
        block = (1 << gpus) - 1
        free = self.free[board.index]
        for slot in range(0, board.gpus, gpus):
            if (free >> slot) & block == block:
                self.free[board.index] = free & ~(block << slot)
                return slot
        return None

    def _succeeded(self) -> list[Json]:
        """Finished single-pod jobs, still bound to their nodes: they hold nothing."""
        pods = []
        for _ in range(max(1, len(self.boards) // 100)):
            board = self.rng.choice(self.boards)
            gpus = self.rng.choice([g for g in POD_GPUS if g <= board.gpus])
            slot = self.rng.randrange(0, board.gpus, gpus)
            pods += self._job([_Member(board.link_layer, board, slot, gpus)], "Succeeded")
        return pods

    def _pending(self) -> list[Json]:
        """Gangs of 8-GPU pods waiting for room, not bound anywhere."""
        pods = []
        for _ in range(max(1, len(self.boards) // 500)):
            members = self.rng.choice((2, 4, 8))
            pending = _Member(self.rng.choice(self.boards).link_layer, None, 0, 8)
            pods += self._job([pending] * members, "Pending")
        return pods

    def _job(self, members: list[_Member], phase: str) -> list[Json]:
        self.jobs += 1
        job = _JobIdentity(
            name=f"{self.rng.choice(MODELS)}-{self.jobs:05d}",
            namespace=self.rng.choice(TEAMS),
            uid=random_uid(self.rng),
            created=30 * 86400 + self.jobs * 60,
            link_layer=members[0].layer,
        )
        return [self._pod(job, k, member, phase) for k, member in enumerate(members)]

    def _pod(self, job: _JobIdentity, k: int, member: _Member, phase: str) -> Json:
        self.version += 1
        role = "master" if k == 0 else "worker"
        profile, network = PROFILES[(job.link_layer, self.spec.per_rail_resources)]
        annotations = {keys.APPLIED: _applied(profile, network)}
        rails = range(member.slot + 1, member.slot + member.gpus + 1)
        if network == "macvlan":
            annotations[MULTUS_NETWORKS] = ",".join(f"kube-rdma/rail{r}" for r in rails)
        spec: Json = {
            "containers": [_container(self.spec, member.gpus, rails)],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}],
            "restartPolicy": "OnFailure",
            "schedulerName": "default-scheduler",
        }
        if member.node is not None:
            spec["nodeName"] = member.node.name
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{job.name}-{role}-{k if k == 0 else k - 1}",
                "namespace": job.namespace,
                "uid": random_uid(self.rng),
                "resourceVersion": str(self.version),
                "creationTimestamp": stamp(job.created),
                "labels": _job_labels(job.name, role, k),
                "annotations": annotations,
                "ownerReferences": [_owner(job)],
            },
            "spec": spec,
            "status": self._status(job, member, phase),
        }

    def _status(self, job: _JobIdentity, member: _Member, phase: str) -> Json:
        if member.node is None:
            scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            return {"phase": phase, "conditions": [scheduled], "qosClass": "Guaranteed"}
        index = member.node.index
        self.ips[index] += 1
        ready = "True" if phase == "Running" else "False"
        return {
            "phase": phase,
            "conditions": [
                {"type": kind, "status": status}
                for kind, status in (("PodScheduled", "True"), ("Ready", ready))
            ],
            "hostIP": member.node.host_ip,
            "podIP": pod_address(member.node, 1 + self.ips[index] % 61)
            if member.node.wide
            else f"10.{128 + (index >> 8)}.{index & 255}.{1 + self.ips[index] % 253}",
            "startTime": stamp(job.created + 5),
            "qosClass": "Guaranteed",
        }


@dataclass(frozen=True)
class _JobIdentity:
    name: str
    namespace: str
    uid: str
    created: int
    link_layer: LinkLayer


def _applied(profile: str, network: str) -> str:
    digest = hashlib.sha256(profile.encode()).hexdigest()[:12]
    return orjson.dumps({"profile": profile, "hash": digest, "network": network}).decode()


def _job_labels(job: str, role: str, k: int) -> dict[str, str]:
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": role,
        "training.kubeflow.org/replica-index": str(k if k == 0 else k - 1),
    }
    if role == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    return labels


def _owner(job: _JobIdentity) -> Json:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _container(spec: ClusterSpec, gpus: int, rails: range) -> Json:
    amounts = {
        "cpu": str(CPU_PER_GPU * gpus),
        "memory": f"{MEMORY_PER_GPU_GI * gpus}Gi",
        GPU: str(gpus),
    }
    if spec.per_rail_resources:
        amounts.update({f"{RDMA_SHARED}{r}": "1" for r in rails})
    else:
        amounts[RDMA_SHARED] = "1"
    return {
        "name": "pytorch",
        "image": IMAGE,
        "command": ["torchrun", "--nnodes", "$(WORLD_SIZE)", "train.py"],
        "resources": {"limits": amounts, "requests": dict(amounts)},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
