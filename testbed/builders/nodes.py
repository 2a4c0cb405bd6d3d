"""Realistic Nodes, topology documents and pods for the extender's tests."""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import (
    Gdr,
    Gid,
    Gpu,
    Level,
    Nic,
    Pair,
    PcieLink,
    Port,
    Topology,
    encode,
)

GEN5_X16 = PcieLink(speed_gts=32.0, width=16, max_speed_gts=32.0, max_width=16)
PEERMEM = Gdr(peermem=True, dmabuf=False)
NO_GDR = Gdr(peermem=False, dmabuf=False)


def trained(speed_gts: float = 32.0, width: int = 16) -> PcieLink:
    """A Gen5 x16 device whose link came up at `speed_gts` and `width`."""
    return PcieLink(speed_gts=speed_gts, width=width, max_speed_gts=32.0, max_width=16)


def hgx(
    link_layer: str = "Ethernet",
    down: tuple[int, ...] = (),
    flaky: tuple[int, ...] = (),
    rate: float = 400.0,
    gpus: int = 8,
    nics: int | None = None,
    shared: bool = False,
    mtu: int | None = None,
    mtus: Mapping[int, int] | None = None,
    pcie: PcieLink | None = None,
    nic_links: Mapping[int, PcieLink] | None = None,
    gpu_links: Mapping[int, PcieLink] | None = None,
    gdr: Gdr | None = None,
) -> Topology:
    """An HGX-like board: GPU i shares a PCIe switch with NIC i (PIX), the other NICs of its
    socket are NODE, the other socket's SYS. `shared`: two GPUs per NIC (GPU i with NIC i//2).

    Document 1.1 facts, absent unless given: `mtu` on every RoCE port (`mtus`: NIC index -> MTU
    for some), `pcie` the link of every NIC and GPU (`nic_links`, `gpu_links`: index -> link
    for some), `gdr` the GPUDirect RDMA paths."""
    nic_count = (gpus // 2 if shared else gpus) if nics is None else nics
    half = max(gpus // 2, 1)
    nic_list = []
    for n in range(nic_count):
        state = "DOWN" if n in down else "ACTIVE"
        gids: tuple[Gid, ...]
        if link_layer == "Ethernet":
            ip = f"10.{n}.0.7"
            gids = (
                Gid(index=0, gid="fe80::1", type="RoCE v1", ip="fe80::1", netdev=f"eth{n}"),
                Gid(index=1, gid="fe80::1", type="RoCE v2", ip="fe80::1", netdev=f"eth{n}"),
                Gid(index=2, gid=f"::ffff:{ip}", type="RoCE v1", ip=ip, netdev=f"eth{n}"),
                Gid(index=3, gid=f"::ffff:{ip}", type="RoCE v2", ip=ip, netdev=f"eth{n}"),
            )
        else:
            gids = (Gid(index=0, gid="fe80::2", type="IB"),)
        port = Port(
            port=1,
            state=state,
            phys_state="LinkUp" if state == "ACTIVE" else "Disabled",
            link_layer=link_layer,
            rate_gbps=rate,
            netdev=f"eth{n}",
            healthy=state == "ACTIVE" and n not in flaky,
            gids=gids if state == "ACTIVE" else (),
            mtu=(mtus or {}).get(n, mtu) if link_layer == "Ethernet" else None,
        )
        nic_list.append(
            Nic(
                name=f"mlx5_{n}",
                pci=f"0000:{0x18 + 0x20 * n:02x}:00.0",
                numa=0 if n < max(nic_count // 2, 1) else 1,
                pcie=(nic_links or {}).get(n, pcie),
                ports=(port,),
            )
        )
    pairs = []
    for g in range(gpus):
        own = g // 2 if shared else g
        for n in range(nic_count):
            if n == own:
                level = Level.PIX
            elif (g < half) == (n < max(nic_count // 2, 1)):
                level = Level.NODE
            else:
                level = Level.SYS
            pairs.append(Pair(gpu=g, nic=f"mlx5_{n}", level=level))
    return Topology(
        gpus=tuple(
            Gpu(
                index=g,
                pci=f"0000:{0x19 + 0x20 * g:02x}:00.0",
                numa=0 if g < half else 1,
                pcie=(gpu_links or {}).get(g, pcie),
            )
            for g in range(gpus)
        ),
        nics=tuple(nic_list),
        pairs=tuple(pairs),
        source="sysfs",
        gdr=gdr,
    )


def node(
    name: str,
    topology: Topology | str | None,
    gpus: int = 8,
    rdma: dict[str, int] | None = None,
    labels: dict[str, str] | None = None,
) -> Json:
    annotations = {}
    if isinstance(topology, Topology):
        annotations[keys.TOPOLOGY] = encode(topology)
    elif isinstance(topology, str):
        annotations[keys.TOPOLOGY] = topology
    allocatable = {"cpu": "192", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": str(gpus)}
    allocatable.update(
        {k: str(v) for k, v in (rdma if rdma is not None else {"rdma/hca": 8}).items()}
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def pod(
    name: str,
    gpus: int = 8,
    rdma: dict[str, int] | None = None,
    network: str | None = "macvlan",
    annotations: dict[str, str] | None = None,
    namespace: str = "team-a",
    node_name: str | None = None,
    node_settings: bool = False,
    phase: str = "Pending",
) -> Json:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    limits.update({k: str(v) for k, v in (rdma if rdma is not None else {"rdma/hca": 1}).items()})
    meta_annotations = dict(annotations or {})
    if network is not None:
        meta_annotations[keys.APPLIED] = orjson.dumps(
            {"profile": "default", "hash": "fbdbc5dab973", "network": network}
        ).decode()
    env = []
    if node_settings:
        for var, key in (("NCCL_IB_GID_INDEX", keys.GID_INDEX), ("NCCL_IB_HCA", keys.HCA)):
            path = f"metadata.annotations['{key}']"
            env.append(
                {"name": var, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}
            )
    container: Json = {
        "name": "trainer",
        "image": "trainer:1",
        "resources": {"limits": limits, "requests": dict(limits)},
    }
    if env:
        container["env"] = env
    spec: Json = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "annotations": meta_annotations,
        },
        "spec": spec,
        "status": {"phase": phase},
    }
