"""What a pod asks of a node, read once per scheduling call from the pod object.

Filters and scores take this frozen view rather than the raw pod. Annotation values the
extender cannot read do not raise: they are collected in `problems`, and the filters then fail
every node with the problem as the reason, which is where an admin looks ("why pending?").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from extender.cluster.devices import DRA_NIC_RESOURCE
from extender.cluster.pods import pod_requests
from kube_rdma.core import keys
from kube_rdma.core.dra.demand import NO_DEMAND, PodDemand
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.objects import Json
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS, is_rdma
from kube_rdma.core.topology import Level, LinkLayer

# The webhook records the profile's network mode; InfiniBand needs IB ports, the others RoCE.
_LINK_LAYER: dict[str, LinkLayer] = {
    "ib": "InfiniBand",
    "host": "Ethernet",
    "macvlan": "Ethernet",
    "sriov": "Ethernet",
}


@dataclass(frozen=True)
class PodView:
    namespace: str
    name: str
    uid: str
    gpus: int
    rdma: Mapping[str, int]
    """The RDMA resources the pod requests."""
    gpu_resource: str
    link_layer: LinkLayer | None
    """None when the pod does not say (no kube-rdma profile applied): any link layer will do."""
    rails: int
    min_rate: float | None = None
    min_affinity: Level | None = None
    require_gdr: bool = False
    """Only nodes with a GPUDirect RDMA path (`kube-rdma.io/require-gdr: "true"`)."""
    acceptance_test: bool = False
    """One of `kube-rdma acceptance`'s own pods: it runs on nodes not accepted yet."""
    node_settings: bool = False
    """The pod reads NCCL_IB_GID_INDEX / NCCL_IB_HCA from annotations the bind must write."""
    problems: tuple[str, ...] = field(default=())
    demand: PodDemand = NO_DEMAND
    """What the pod's resource claims still ask of a node (its GPUs and NICs already counted
    in `gpus` and `rdma`)."""
    selectors: Selectors | None = field(default=None, compare=False, repr=False)
    """The CEL evaluator the DRA filter matches `demand` with."""
    in_containers: tuple[tuple[str, int], ...] = ()
    """The GPU and RDMA resources the pod's containers request (not its claims), sorted."""

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def needs_rdma(self) -> bool:
        return bool(self.rdma) or self.link_layer is not None

    @property
    def relevant(self) -> bool:
        """The extender has an opinion about this pod."""
        demand = self.demand
        asks = bool(demand.requests or demand.pinned or demand.problems)
        return self.gpus > 0 or self.needs_rdma or self.require_gdr or asks

    @cached_property
    def shape(self) -> tuple[Any, ...]:
        """Everything a verdict depends on: pods of one shape get the same answers."""
        return (
            self.gpus,
            self.gpu_resource,
            tuple(sorted(self.rdma.items())),
            self.link_layer,
            self.rails,
            self.min_rate,
            self.min_affinity,
            self.require_gdr,
            self.acceptance_test,
            self.problems,
            self.demand,
        )


def pod_view(
    pod: Json,
    gpu_resources: Iterable[str] = ("nvidia.com/gpu",),
    rdma_patterns: Iterable[str] = DEFAULT_RDMA_PATTERNS,
    demand: PodDemand = NO_DEMAND,
    selectors: Selectors | None = None,
) -> PodView:
    """`demand`, from the cluster's DRA objects, adds the GPUs and RDMA NICs the pod's
    resource claims ask for to its requests."""
    meta = pod.get("metadata") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    requests = pod_requests(pod)
    gpu_names = tuple(gpu_resources)
    gpus = sum(requests.get(n, 0) for n in gpu_names) + demand.count("gpu")
    patterns = tuple(rdma_patterns)
    rdma = {r: n for r, n in requests.items() if is_rdma(r, patterns)}
    in_containers = tuple(
        sorted(({r: requests[r] for r in gpu_names if requests.get(r)} | rdma).items())
    )
    if demand.count("nic"):
        rdma[DRA_NIC_RESOURCE] = rdma.get(DRA_NIC_RESOURCE, 0) + demand.count("nic")
    problems: list[str] = list(demand.problems)
    link_layer = _link_layer(annotations, problems)
    rails = _rails(annotations, rdma, gpus, problems)
    return PodView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or meta.get("generateName") or ""),
        uid=str(meta.get("uid") or ""),
        gpus=gpus,
        rdma=rdma,
        gpu_resource=next((n for n in gpu_names if n in requests), gpu_names[0]),
        link_layer=link_layer,
        rails=rails,
        min_rate=_number(annotations, keys.MIN_RATE, problems),
        min_affinity=_level(annotations, problems),
        require_gdr=_flag(annotations, keys.REQUIRE_GDR, problems),
        acceptance_test=keys.ACCEPTANCE_RUN in (meta.get("labels") or {}),
        node_settings=_reads_node_settings(pod),
        problems=tuple(problems),
        demand=demand,
        selectors=selectors,
        in_containers=in_containers,
    )


def _link_layer(annotations: Mapping[str, str], problems: list[str]) -> LinkLayer | None:
    applied = annotations.get(keys.APPLIED)
    if applied is None:
        return None
    try:
        network = orjson.loads(applied).get("network")
    except (orjson.JSONDecodeError, AttributeError):
        problems.append(f"{keys.APPLIED} is not the JSON the kube-rdma webhook writes")
        return None
    return _LINK_LAYER.get(str(network))


def _rails(
    annotations: Mapping[str, str], rdma: Mapping[str, int], gpus: int, problems: list[str]
) -> int:
    """Rails the pod uses: its annotation, else one per per-rail resource, else one per GPU."""
    value = annotations.get(keys.RAILS)
    if value is not None:
        if value.isdigit() and 0 < int(value) <= 64:
            return int(value)
        problems.append(f"{keys.RAILS}={value!r} is not a number of rails between 1 and 64")
    if len(rdma) > 1:
        return len(rdma)
    return gpus if gpus else (1 if rdma else 0)


def _number(annotations: Mapping[str, str], key: str, problems: list[str]) -> float | None:
    value = annotations.get(key)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number < 0 or number != number:
        problems.append(f"{key}={value!r} is not a rate in Gb/s")
        return None
    return number


def _level(annotations: Mapping[str, str], problems: list[str]) -> Level | None:
    value = annotations.get(keys.MIN_AFFINITY)
    if value is None:
        return None
    try:
        return Level(value.upper())
    except ValueError:
        problems.append(f"{keys.MIN_AFFINITY}={value!r} is not one of PIX, PXB, PHB, NODE, SYS")
        return None


def _flag(annotations: Mapping[str, str], key: str, problems: list[str]) -> bool:
    value = annotations.get(key)
    if value is None or value.lower() == "false":
        return False
    if value.lower() == "true":
        return True
    problems.append(f'{key}={value!r} is not "true" or "false"')
    return False


def _reads_node_settings(pod: Json) -> bool:
    wanted = (f"['{keys.GID_INDEX}']", f"['{keys.HCA}']")
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for entry in container.get("env") or []:
            source = entry.get("valueFrom")
            field = source.get("fieldRef") if isinstance(source, dict) else None
            path = field.get("fieldPath") if isinstance(field, dict) else None
            if isinstance(path, str) and path.endswith(wanted):
                return True
    return False
