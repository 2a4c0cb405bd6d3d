"""The node topology document: what the agent publishes and the extender reads.

A public contract (docs/topology.md), versioned by `version` (incompatible changes) and `minor`
(added fields). The agent writes it, compact JSON, into the Node annotation
`kube-rdma.io/topology`; the extender parses it with these models and treats a document it cannot
read as a node without RDMA. Readers ignore fields they do not know and accept any minor version
of the major version they know, so an agent newer than the extender never makes its nodes look
RDMA-less. Fields a discovery source cannot know (PCI addresses from an `nvidia-smi topo -m`
text, ports without sysfs) are null, never invented.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

VERSION: Literal[1] = 1
MINOR = 2
"""1: port MTU and error rates, PCIe links of NICs and GPUs, the GPUDirect RDMA paths.
2: the ConnectX-8 Data Direct function a NIC reaches GPU memory through."""

# How a port carries RDMA: InfiniBand, or RoCE over Ethernet.
LinkLayer = Literal["InfiniBand", "Ethernet"]


class Level(StrEnum):
    """GPU-NIC PCIe relation as `nvidia-smi topo -m` names it, best first."""

    PIX = "PIX"  # at most one PCIe switch between them
    PXB = "PXB"  # several PCIe switches, no host bridge
    PHB = "PHB"  # through the PCIe host bridge (the CPU)
    NODE = "NODE"  # between host bridges of one NUMA node
    SYS = "SYS"  # across NUMA nodes (the SMP interconnect)

    @property
    def rank(self) -> int:
        """0 for PIX (best) to 4 for SYS (worst)."""
        return list(Level).index(self)


class _Model(BaseModel):
    # `ignore`: a newer agent's added fields are dropped, not refused (forward compatibility).
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class PcieLink(_Model):
    """A PCI function's link as trained, against what it and its slot can do (sysfs
    current_link_speed/width vs max_link_speed/width). A link that trained below its maximum is
    the classic silent halving of bandwidth."""

    speed_gts: float = Field(alias="speedGTs")
    """Current link speed in GT/s (16.0 for PCIe 4, 32.0 for PCIe 5)."""
    width: int = Field(ge=0)
    max_speed_gts: float = Field(alias="maxSpeedGTs")
    max_width: int = Field(alias="maxWidth", ge=0)

    @property
    def degraded(self) -> bool:
        """Trained below its maximum speed or width: right for NICs, whose links stay at speed."""
        return self.speed_gts < self.max_speed_gts or self.width < self.max_width

    @property
    def narrowed(self) -> bool:
        """Trained to fewer lanes than it can use. For GPUs only width counts: an idle GPU
        lowers its link speed to save power (and raises it under load), so a low current speed
        is no sign of a fault, but lanes do not come back."""
        return self.width < self.max_width


class Gdr(_Model):
    """GPUDirect RDMA: NICs read and write GPU memory directly."""

    peermem: bool
    """nvidia_peermem (or nv_peer_mem) loaded and registered: /sys/kernel/mm/memory_peers/nv_mem/
    version exists, which is what NCCL checks."""
    dmabuf: bool
    """Best-effort signs of the dma-buf path: the NVIDIA open kernel module and a kernel new
    enough for it."""

    @property
    def available(self) -> bool:
        return self.peermem or self.dmabuf


class Gpu(_Model):
    index: int = Field(ge=0)
    """The GPU's index as nvidia-smi orders them (by PCI bus id)."""
    pci: str | None = None
    numa: int | None = None
    pcie: PcieLink | None = None


class Gid(_Model):
    index: int = Field(ge=0)
    gid: str | None = None
    type: Literal["IB", "RoCE v1", "RoCE v2"]
    ip: str | None = None
    """The IPv4 or IPv6 address the GID encodes (RoCE only)."""
    netdev: str | None = None


class Port(_Model):
    port: int = Field(ge=1)
    state: str
    """ACTIVE, DOWN, INIT, ARMED (the kernel's port state name)."""
    phys_state: str | None = Field(default=None, alias="physState")
    link_layer: LinkLayer = Field(alias="linkLayer")
    rate_gbps: float | None = Field(default=None, alias="rateGbps")
    netdev: str | None = None
    healthy: bool
    gids: tuple[Gid, ...] = ()
    counters: dict[str, int] = {}
    """Error counters (symbol_error, link_downed, ...), as last read."""
    error_rates: dict[str, float] | None = Field(default=None, alias="errorRates")
    """Each judged error counter's growth per minute over its window (absent before a window
    has passed)."""
    mtu: int | None = None
    """The MTU of the port's netdev (RoCE); not in sysfs for InfiniBand."""


class DataDirect(_Model):
    """The PCI function (ConnectX-8 Data Direct, 15b3:2100) through which a NIC does its DMA
    to and from GPU memory; the NIC's GPU pairs are measured from it (agent/data_direct.py)."""

    pci: str
    numa: int | None = None
    pcie: PcieLink | None = None
    """The function's own PCIe link: the one GPU memory traffic crosses."""


class Nic(_Model):
    name: str
    pci: str | None = None
    numa: int | None = None
    pcie: PcieLink | None = None
    ports: tuple[Port, ...] = ()
    data_direct: DataDirect | None = Field(default=None, alias="dataDirect")


class Pair(_Model):
    gpu: int
    nic: str
    level: Level


class Topology(_Model):
    version: Literal[1] = VERSION
    minor: int = Field(default=MINOR, ge=0)
    gpus: tuple[Gpu, ...] = ()
    nics: tuple[Nic, ...] = ()
    pairs: tuple[Pair, ...] = ()
    """Every GPU-NIC pair."""
    source: Literal["sysfs", "nvidia-smi"] | None = None
    gdr: Gdr | None = None
    """Absent when the source cannot tell (no sysfs)."""


# All annotations of an object share 256 KiB; the document keeps well below half of that.
MAX_DOCUMENT_BYTES = 96 * 1024


class DocumentTooLarge(ValueError):
    """The topology does not fit the annotation budget even without GID tables."""


def encode(topology: Topology, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """Compact JSON for the annotation. Over `limit`, GID tables are trimmed to RoCE v2 and
    IB entries, then dropped, before giving up."""
    for trim in (_keep_all, _keep_v2, _drop_gids):
        text = trim(topology).model_dump_json(by_alias=True, exclude_none=True)
        if len(text.encode()) <= limit:
            return text
    raise DocumentTooLarge(
        f"the topology document is {len(text.encode())} bytes without GID tables, over the "
        f"{limit}-byte budget"
    )


def decode(text: str) -> Topology:
    """Parse an annotation value; raises pydantic.ValidationError or ValueError when invalid."""
    return Topology.model_validate_json(text)


def _with_gids(topology: Topology, keep: set[str]) -> Topology:
    nics = tuple(
        nic.model_copy(
            update={
                "ports": tuple(
                    p.model_copy(update={"gids": tuple(g for g in p.gids if g.type in keep)})
                    for p in nic.ports
                )
            }
        )
        for nic in topology.nics
    )
    return topology.model_copy(update={"nics": nics})


def _keep_all(topology: Topology) -> Topology:
    return topology


def _keep_v2(topology: Topology) -> Topology:
    return _with_gids(topology, {"RoCE v2", "IB"})


def _drop_gids(topology: Topology) -> Topology:
    return _with_gids(topology, set())
