"""Realistic GPU clusters as Kubernetes Node and Pod objects, generated from a seed.

The extender's benchmark, its tests, the demo and the gang simulator all need a cluster that
looks like a real one: HGX nodes with eight GPUs and eight 400G rails (a few 4-GPU boards so
bin-packing matters), the topology document the agent would publish (a rail down here, a NIC
counting errors there, a node whose agent never ran), leaf/spine/zone domain labels, and training
pods already running on half the GPUs. `generate` returns the objects as plain dicts in the form
the apiserver returns them; `write_snapshot` stores them as a `kind: List` file, the format the
extender's `--cluster-snapshot` reads.

Everything is drawn from `random.Random` streams seeded by `ClusterSpec.seed`, one stream per
concern (node hardware, pods), so the same spec always gives byte-identical output and changing
the pod load does not change the nodes. Nodes are numbered in rack order: node i sits in leaf
i // nodes_per_leaf. Each node's document is built and encoded on its own, since its GIDs carry
per-node addresses (rail r's IPv4 is 10.r.x.y) as on a real cluster; at about 0.2 ms a node that
is cheaper than templating (5,000 nodes with their pods take about 1 s).
"""

from __future__ import annotations

import hashlib
import ipaddress
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import orjson

from agent.health import rdma_ready
from agent.sysfs import ERROR_COUNTERS
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Gid, Gpu, Level, LinkLayer, Nic, Pair, Port, Topology, encode

LEAF_LABEL = keys.LEAF
SPINE_LABEL = keys.SPINE
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
RDMA_SHARED = "rdma/hca"
MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"

# The rail IPv4 plan gives each rail a 10.r.0.0/16 with 250 hosts per /24; pod CIDRs are the
# /24s of 10.128.0.0/9. Both run out past 32,768 nodes.
MAX_NODES = 32_768
SPINES_PER_ZONE = 4
FOUR_GPU_FRACTION = 0.03
IB_SPINE_FRACTION = 0.25
RATE_GBPS = 400.0

# Root-complex buses of an HGX H100 board, two sockets of four; under each, one PCIe switch with
# a ConnectX-7 at bus+3 and a GPU at bus+4 (the layout of tests/extender/sysfs_tree.py).
HGX_ROOTS = (0x15, 0x37, 0x48, 0x59, 0x97, 0xB7, 0xC8, 0xD9)
BOARD_SLOTS = {8: (0, 1, 2, 3, 4, 5, 6, 7), 4: (0, 1, 4, 5)}
INSTANCE_TYPES = {8: "hgx-h100-8g", 4: "hgx-h100-4g"}
CPU_MEMORY = {8: ("192", "2Ti"), 4: ("96", "1Ti")}

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
EPOCH = datetime(2024, 6, 3, tzinfo=UTC)


@dataclass(frozen=True)
class ClusterSpec:
    """What to generate. Fractions pick exactly round(fraction x nodes) nodes."""

    nodes: int = 64
    seed: int = 0
    nodes_per_leaf: int = 32
    """Leaf switch domain size."""
    leaves_per_spine: int = 8
    """Spine (block) domain size, in leaves."""
    link_layer: Literal["Ethernet", "InfiniBand", "mixed"] = "Ethernet"
    """`mixed`: about a quarter of the spines are InfiniBand, the rest Ethernet."""
    rail_down_fraction: float = 0.02
    """Nodes with exactly one rail DOWN."""
    flaky_fraction: float = 0.01
    """Nodes with one ACTIVE port marked unhealthy (its error counters grow)."""
    no_agent_fraction: float = 0.005
    """Nodes without the topology annotation (the agent never ran there)."""
    busy_fraction: float = 0.5
    """Fraction of all GPUs taken by running pods."""
    per_rail_resources: bool = False
    """rdma/hca1..8 (1 each) instead of rdma/hca: 8."""

    def __post_init__(self) -> None:
        problems = _spec_problems(self)
        if problems:
            raise ValueError("invalid ClusterSpec: " + "; ".join(problems))


def _spines(spec: ClusterSpec) -> int:
    leaves = -(-spec.nodes // spec.nodes_per_leaf)
    return -(-leaves // spec.leaves_per_spine)


def _spec_problems(spec: ClusterSpec) -> list[str]:
    problems = []
    if not 1 <= spec.nodes <= MAX_NODES:
        problems.append(f"nodes must be 1 to {MAX_NODES}, got {spec.nodes}")
    for name in ("nodes_per_leaf", "leaves_per_spine"):
        if getattr(spec, name) < 1:
            problems.append(f"{name} must be at least 1, got {getattr(spec, name)}")
    fractions = ("rail_down_fraction", "flaky_fraction", "no_agent_fraction", "busy_fraction")
    for name in fractions:
        if not 0.0 <= getattr(spec, name) <= 1.0:
            problems.append(f"{name} must be between 0 and 1, got {getattr(spec, name)}")
    if spec.rail_down_fraction + spec.flaky_fraction + spec.no_agent_fraction > 1.0:
        problems.append("rail_down, flaky and no_agent fractions pick distinct nodes: sum <= 1")
    if spec.link_layer not in ("Ethernet", "InfiniBand", "mixed"):
        problems.append(f"link_layer must be Ethernet, InfiniBand or mixed, got {spec.link_layer}")
    elif spec.link_layer == "mixed" and not problems and _spines(spec) < 2:
        problems.append(
            f"link_layer mixed varies per spine, and {spec.nodes} nodes fill one spine of "
            f"{spec.nodes_per_leaf * spec.leaves_per_spine}: add nodes or lower leaves_per_spine"
        )
    return problems


@dataclass(frozen=True)
class _Board:
    """One node's hardware and where it sits."""

    index: int
    gpus: int
    link_layer: LinkLayer
    leaf: int
    spine: int
    down_rail: int | None = None
    flaky_rail: int | None = None
    agent: bool = True

    @property
    def name(self) -> str:
        return f"gpu-{self.index:05d}"

    @property
    def host_ip(self) -> str:
        n = self.index + 1
        return f"172.{16 + (n >> 16)}.{n >> 8 & 255}.{n & 255}"


def generate(spec: ClusterSpec) -> list[Json]:
    """The cluster's Nodes, then its Pods (running, succeeded, pending)."""
    boards = _boards(spec, random.Random(f"{spec.seed}:boards"))
    nodes_rng = random.Random(f"{spec.seed}:nodes")
    nodes = [_node(spec, board, nodes_rng) for board in boards]
    pods = _Pods(spec, boards, random.Random(f"{spec.seed}:pods")).all()
    return [*nodes, *pods]


def write_snapshot(objects: list[Json], path: Path) -> None:
    """A `kind: List` JSON file, as `kubectl get nodes,pods -o json` writes it."""
    document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
    path.write_bytes(orjson.dumps({**document, "items": objects}))


# Hardware


def _boards(spec: ClusterSpec, rng: random.Random) -> list[_Board]:
    n = spec.nodes
    ib_spines = _ib_spines(spec, rng)
    four_gpu = set(rng.sample(range(n), round(FOUR_GPU_FRACTION * n)))
    counts = [round(f * n) for f in (spec.rail_down_fraction, spec.flaky_fraction)]
    picked = rng.sample(range(n), counts[0] + counts[1] + round(spec.no_agent_fraction * n))
    down, flaky = set(picked[: counts[0]]), set(picked[counts[0] : sum(counts)])
    no_agent = set(picked[sum(counts) :])
    boards = []
    for i in range(n):
        leaf = i // spec.nodes_per_leaf
        spine = leaf // spec.leaves_per_spine
        gpus = 4 if i in four_gpu else 8
        boards.append(
            _Board(
                index=i,
                gpus=gpus,
                link_layer="InfiniBand" if spine in ib_spines else "Ethernet",
                leaf=leaf,
                spine=spine,
                down_rail=rng.randrange(gpus) if i in down else None,
                flaky_rail=rng.randrange(gpus) if i in flaky else None,
                agent=i not in no_agent,
            )
        )
    return boards


def _ib_spines(spec: ClusterSpec, rng: random.Random) -> set[int]:
    spines = _spines(spec)
    if spec.link_layer == "Ethernet":
        return set()
    if spec.link_layer == "InfiniBand":
        return set(range(spines))
    count = min(spines - 1, max(1, round(IB_SPINE_FRACTION * spines)))
    return set(rng.sample(range(spines), count))


def _gpus(slots: Sequence[int]) -> tuple[Gpu, ...]:
    return tuple(
        Gpu(index=i, pci=f"0000:{HGX_ROOTS[s] + 4:02x}:00.0", numa=s // 4)
        for i, s in enumerate(slots)
    )


def _pairs(slots: Sequence[int]) -> tuple[Pair, ...]:
    """GPU i shares a PCIe switch with NIC i; the other NICs of its socket are a host bridge
    away (NODE), those of the other socket across the SMP link (SYS)."""
    return tuple(
        Pair(gpu=g, nic=f"mlx5_{r}", level=_level(gs, rs))
        for g, gs in enumerate(slots)
        for r, rs in enumerate(slots)
    )


def _level(gpu_slot: int, nic_slot: int) -> Level:
    if gpu_slot == nic_slot:
        return Level.PIX
    return Level.NODE if gpu_slot // 4 == nic_slot // 4 else Level.SYS


_GPUS = {count: _gpus(slots) for count, slots in BOARD_SLOTS.items()}
_PAIRS = {count: _pairs(slots) for count, slots in BOARD_SLOTS.items()}


def _topology(board: _Board, rng: random.Random) -> Topology:
    nics = tuple(_nic(board, rail, slot, rng) for rail, slot in enumerate(BOARD_SLOTS[board.gpus]))
    return Topology(gpus=_GPUS[board.gpus], nics=nics, pairs=_PAIRS[board.gpus], source="sysfs")


def _nic(board: _Board, rail: int, slot: int, rng: random.Random) -> Nic:
    bus = HGX_ROOTS[slot] + 3
    ethernet = board.link_layer == "Ethernet"
    netdev = f"enp{bus}s0np0" if ethernet else f"ibp{bus}s0"
    # Per-NIC MAC/GUID tail: unique across the cluster, Mellanox OUI 08:c0:eb / a0:88:c2.
    tail = 0x100000 + board.index * 8 + rail
    gids = _roce_gids(board, rail, netdev, tail) if ethernet else _ib_gids(tail)
    counters = dict.fromkeys(ERROR_COUNTERS, 0)
    counters["link_downed"] = rng.choice((0, 0, 0, 1, 2))
    state, phys, rate, healthy = "ACTIVE", "LinkUp", RATE_GBPS, True
    if rail == board.down_rail:
        state, healthy = "DOWN", False
        phys, rate = ("Disabled", 40.0) if ethernet else ("Polling", 10.0)
        counters["link_downed"] += rng.randint(1, 5)
    elif rail == board.flaky_rail:
        healthy = False
        counters.update(
            symbol_error=rng.randint(1_000, 50_000),
            link_error_recovery=rng.randint(1, 20),
            port_rcv_errors=rng.randint(10, 500),
        )
    port = Port(
        port=1,
        state=state,
        phys_state=phys,
        link_layer=board.link_layer,
        rate_gbps=rate,
        netdev=netdev,
        healthy=healthy,
        gids=gids,
        counters=counters,
    )
    return Nic(name=f"mlx5_{rail}", pci=f"0000:{bus:02x}:00.0", numa=slot // 4, ports=(port,))


def _roce_gids(board: _Board, rail: int, netdev: str, tail: int) -> tuple[Gid, ...]:
    """Link-local (from the MAC, EUI-64) v1/v2 at 0/1, the rail's IPv4 v1/v2 at 2/3."""
    local = str(ipaddress.IPv6Address((0xFE80 << 112) | (0x0AC0EBFFFE << 24) | tail))
    ip = f"10.{rail + 1}.{board.index // 250}.{board.index % 250 + 1}"
    mapped = f"::ffff:{ip}"
    return (
        Gid(index=0, gid=local, type="RoCE v1", ip=local, netdev=netdev),
        Gid(index=1, gid=local, type="RoCE v2", ip=local, netdev=netdev),
        Gid(index=2, gid=mapped, type="RoCE v1", ip=ip, netdev=netdev),
        Gid(index=3, gid=mapped, type="RoCE v2", ip=ip, netdev=netdev),
    )


def _ib_gids(tail: int) -> tuple[Gid, ...]:
    """The default-subnet-prefix GID of the port GUID."""
    gid = str(ipaddress.IPv6Address((0xFE80 << 112) | (0xA088C20300 << 24) | tail))
    return (Gid(index=0, gid=gid, type="IB"),)


# Objects


def _stamp(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _node(spec: ClusterSpec, board: _Board, rng: random.Random) -> Json:
    labels = {
        "kubernetes.io/hostname": board.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": INSTANCE_TYPES[board.gpus],
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": str(board.gpus),
        LEAF_LABEL: f"leaf-{board.leaf:03d}",
        SPINE_LABEL: f"spine-{board.spine:02d}",
        ZONE_LABEL: f"zone-{board.spine // SPINES_PER_ZONE}",
    }
    annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    # Built even where no agent runs, so the no-agent nodes do not shift the other nodes' draws.
    topology = _topology(board, rng)
    if board.agent:
        annotations[keys.TOPOLOGY] = encode(topology)
        labels[keys.RDMA_READY] = "true" if rdma_ready(topology) else "false"
    cpu, memory = CPU_MEMORY[board.gpus]
    resources = {"cpu": cpu, "memory": memory, "pods": "110", GPU: str(board.gpus)}
    resources.update(_rdma_allocatable(spec, board.gpus))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": board.name,
            "uid": _uid(rng),
            "resourceVersion": str(1000 + board.index),
            "creationTimestamp": _stamp(board.index),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"podCIDR": _pod_cidr(board), "podCIDRs": [_pod_cidr(board)]},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": _node_conditions(),
            "addresses": [
                {"type": "InternalIP", "address": board.host_ip},
                {"type": "Hostname", "address": board.name},
            ],
            "nodeInfo": _node_info(rng),
        },
    }


def _rdma_allocatable(spec: ClusterSpec, gpus: int) -> dict[str, str]:
    if spec.per_rail_resources:
        return {f"{RDMA_SHARED}{rail}": "1" for rail in range(1, gpus + 1)}
    return {RDMA_SHARED: str(gpus)}


def _pod_cidr(board: _Board) -> str:
    return f"10.{128 + (board.index >> 8)}.{board.index & 255}.0/24"


_HEARTBEAT = _stamp(60 * 86400)


def _node_conditions() -> list[Json]:
    pressure = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    rows = [(kind, "False", reason, message) for kind, reason, message in pressure]
    rows.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": _HEARTBEAT,
            "lastTransitionTime": _stamp(3600),
        }
        for kind, status, reason, message in rows
    ]


def _node_info(rng: random.Random) -> Json:
    return {
        "machineID": uuid.UUID(int=rng.getrandbits(128)).hex,
        "systemUUID": _uid(rng),
        "bootID": _uid(rng),
        "kernelVersion": "5.15.0-113-generic",
        "osImage": "Ubuntu 22.04.4 LTS",
        "containerRuntimeVersion": "containerd://1.7.18",
        "kubeletVersion": "v1.30.2",
        "kubeProxyVersion": "v1.30.2",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


# Pods


@dataclass(frozen=True)
class _Member:
    """One pod of a job: where it runs (None while pending) and its first GPU slot."""

    layer: LinkLayer
    node: _Board | None
    slot: int
    gpus: int


class _Pods:
    """Places training jobs onto the boards until `busy_fraction` of the GPUs are taken.

    A job is a PyTorchJob whose pods each take the same number of GPUs, as one aligned block of
    GPU slots (8 whole, 4 per socket, 2, 1), and whose per-rail RDMA resources are the rails of
    those slots. It starts at a random node and takes the next nodes of the same link layer, as
    a gang scheduler packing a job into a rack would.
    """

    def __init__(self, spec: ClusterSpec, boards: list[_Board], rng: random.Random) -> None:
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

    def _take(self, board: _Board, gpus: int) -> int | None:
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
            uid=_uid(self.rng),
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
                "uid": _uid(self.rng),
                "resourceVersion": str(self.version),
                "creationTimestamp": _stamp(job.created),
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
            "podIP": f"10.{128 + (index >> 8)}.{index & 255}.{1 + self.ips[index] % 253}",
            "startTime": _stamp(job.created + 5),
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
