"""Reading NCCL's `NCCL_DEBUG=INFO` lines: which transport each connection used, on which
devices, with or without GPUDirect RDMA, and the errors known to mean something.

NCCL prints (INIT and NET subsystems):
- `NCCL version 2.28.9+cuda13.0`;
- the network it chose: `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ...`, or
  `NET/IB : No device found.` then `NET/Socket : Using [0]eth0:...` and `Using network Socket`;
- `comm 0x... rank 0 nRanks 16 nNodes 2 ...`: how many nodes the communicator spans;
- one line per channel connection: `Channel 02/0 : 3[3] -> 10[2] [receive] via NET/IB/2/GDRDMA`
  (older: `Channel 01 : 2[c7000] -> 0[87000] via NET/IB/5/GDRDMA`), `via P2P/CUMEM/read`,
  `via P2P/IPC`, `via SHM/direct/direct`, `via NET/Socket/0`;
- RoCE's GID: `NCCL_IB_GID_INDEX set by environment to 3.`, and per queue pair `... GID 3 (...)`.

Pure: text in, a `LogReport` out. Lines from several ranks and hosts may be interleaved.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from fabric.known_errors import match

VERSION = re.compile(r"NCCL version (\S+)")
IB_DEVICES = re.compile(r"NET/IB ?: Using (.*?)(?:;|$)")
IB_DEVICE = re.compile(r"\[(\d+)\]([\w.-]+):(\d+)/(IB|RoCE)")
IB_NONE = re.compile(r"NET/IB ?: No device found")
NETWORK = re.compile(r"Using network (\S+)")
NODES = re.compile(r"nRanks (\d+) nNodes (\d+)")
CHANNEL = re.compile(r"Channel \d+(?:/\d+)? : \d+\[\w+\] -> \d+\[\w+\](?: \[\w+\])? via (\S+)")
GID_ENV = re.compile(r"NCCL_IB_GID_INDEX set by environment to (-?\d+)")
GID_QP = re.compile(r"\bGID (\d+) \(")

Transport = str
"""`IB`, `RoCE`, `Socket`, `P2P/SHM` (nothing left the node: connections inside it only, or a
communicator on one node), or `unknown`."""


@dataclass(frozen=True)
class Finding:
    error: str
    line: int
    text: str
    meaning: str
    check: str


@dataclass(frozen=True)
class LogReport:
    nccl_version: str | None
    network: str | None
    """The network plugin NCCL chose (`IB`, `Socket`, ...)."""
    nodes: int | None
    ib_devices: dict[int, str]
    """NET/IB device index -> `mlx5_0:1/RoCE`."""
    connections: dict[str, int]
    """Connections per path kind: `NET/IB`, `NET/Socket`, `P2P`, `SHM`, ... ."""
    gdr: bool | None
    """Whether NET/IB connections used GPUDirect RDMA; None without NET/IB connections."""
    gid_index: int | None
    errors: tuple[Finding, ...] = field(default=())

    @property
    def transport(self) -> Transport:
        net = {k for k in self.connections if k.startswith("NET/")}
        if "NET/Socket" in net or (not net and self.network == "Socket" and self._spans_nodes):
            return "Socket"
        if "NET/IB" in net or (not self.connections and self.network == "IB"):
            used = self.ib_devices.values()
            return "RoCE" if used and all(d.endswith("/RoCE") for d in used) else "IB"
        if net:
            return "unknown"
        inside = self.connections or self.nodes == 1
        return "P2P/SHM" if inside else "unknown"

    @property
    def rdma(self) -> bool:
        """Every connection that left a host used RDMA and nothing failed."""
        return not self.errors and self.transport in ("IB", "RoCE", "P2P/SHM")

    @property
    def _spans_nodes(self) -> bool:
        return self.nodes is not None and self.nodes > 1

    @property
    def seen(self) -> bool:
        """The text has NCCL lines at all."""
        return self.nccl_version is not None or self.network is not None or bool(self.connections)


def analyze(text: str) -> LogReport:
    version = network = None
    nodes = gid = None
    devices: dict[int, str] = {}
    paths: Counter[str] = Counter()
    gdr: list[bool] = []
    errors: list[Finding] = []
    for number, line in enumerate(text.splitlines(), 1):
        if m := CHANNEL.search(line):
            kind = _kind(m[1])
            paths[kind] += 1
            if kind == "NET/IB":
                gdr.append(m[1].endswith("/GDRDMA"))
            continue
        version = version or _group(VERSION, line)
        network = _group(NETWORK, line) or network
        if m := NODES.search(line):
            nodes = max(nodes or 0, int(m[2]))
        if m := IB_DEVICES.search(line):
            devices.update({int(d[0]): f"{d[1]}:{d[2]}/{d[3]}" for d in IB_DEVICE.findall(m[1])})
        if (m := GID_ENV.search(line) or GID_QP.search(line)) and gid is None:
            gid = int(m[1])
        if (known := match(line)) and known.name not in {e.error for e in errors}:
            errors.append(Finding(known.name, number, line.strip(), known.meaning, known.check))
    return LogReport(
        nccl_version=version,
        network=network,
        nodes=nodes,
        ib_devices=devices,
        connections=dict(sorted(paths.items())),
        gdr=(all(gdr) if gdr else None),
        gid_index=gid,
        errors=tuple(errors),
    )


def _kind(via: str) -> str:
    """`NET/IB/2/GDRDMA` -> `NET/IB`; `P2P/CUMEM/read` -> `P2P`; `SHM/direct/direct` -> `SHM`."""
    parts = via.split("/")
    return "/".join(parts[:2]) if parts[0] == "NET" else parts[0]


def _group(pattern: re.Pattern[str], line: str) -> str | None:
    m = pattern.search(line)
    return m[1] if m else None
