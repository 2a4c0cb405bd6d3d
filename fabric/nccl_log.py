"""Reading NCCL's `NCCL_DEBUG=INFO` (or `WARN`) lines: which transport each connection used, on
which devices, with or without GPUDirect RDMA, and every warning with what it usually means.

NCCL prints (INIT and NET subsystems):
- `NCCL version 2.28.9+cuda13.0`;
- the network it chose: `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ...`, or
  `NET/IB : No device found.` then `NET/Socket : Using [0]eth0:...`, and `Using network IB` or
  `Using network Socket`. Network plugins print their own names: `IBext` or `IBext_v8` (the
  NGC and HPC-X images' build of the IB transport, `[0]mlx5_0:1/IB/SHARP` with SHARP), and
  `AWS Libfabric` or `Libfabric` (the AWS OFI plugin, over EFA);
- `comm 0x... rank 0 nRanks 16 nNodes 2 ...`: how many nodes the communicator spans;
- one line per channel connection: `Channel 02/0 : 3[3] -> 10[2] [receive] via NET/IB/2/GDRDMA`
  (older: `Channel 01 : 2[c7000] -> 0[87000] via NET/IB/5/GDRDMA`, `Ring 00 : 1 -> 2 [send]
  via NET/IB/0`), `via NET/IB/1(2)/GDRDMA/Shared` (through the PXN proxy rank 2, shared
  buffers), `via NET/IBext_v8/0/GDRDMA(PCI)`, `via P2P/CUMEM/read`, `via SHM/direct/direct`,
  `via NET/Socket/0`;
- RoCE's GID: `NCCL_IB_GID_INDEX set by environment to 3.`, and per queue pair `... GID 3 (...)`;
- whether GPUDirect RDMA is possible, per NIC (net_ib.cc): `NET/IB : GPU Direct RDMA Enabled for
  HCA 0 'mlx5_0'`, `... Disabled for HCA 0 'mlx5_0' (no module)` (the Socket transport prints
  `NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'`, which says nothing about RDMA); and
  per GPU and NIC (graph/paths.cc): `GPU Direct RDMA Enabled for GPU 0 / HCA 1 (distance 3 <= 4),
  read 1 mode Default`, `... Disabled for GPU 2 / HCA 1 (distance 5 > 4)` (older: with a
  `NET/IB : ` in front).

`Using network X` alone says what NCCL chose for traffic between nodes: Socket is TCP, IB or a
plugin RDMA. Channel lines, where present, say what each connection used. GPUDirect RDMA is read
from the best evidence present: the channel lines (what each connection used), else the GPU-NIC
lines (what NCCL decided per pair), else the NIC lines (what each NIC allows).

Pure: text in, a `LogReport` out. Lines from several ranks and hosts may be interleaved, and
launchers' prefixes (fabric/prefixes.py) are taken off first.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from fabric import known_errors, prefixes

VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")
NET_USING = re.compile(r"NET/\w+ ?: Using (.*?)(?:;|$)")
IB_DEVICE = re.compile(r"\[(\d+)\]([\w.-]+):(\d+)/(IB|RoCE)\b")
NETWORK = re.compile(r"Using network (\w[\w ]*?)\s*$")
NODES = re.compile(r"nRanks (\d+) nNodes (\d+)")
CHANNEL = re.compile(
    r"(?:Channel|Ring) \d+(?:/\d+)? : \d+(?:\[\w+\])? -> \d+(?:\[\w+\])?(?: \[\w+\])?"
    r" via (NET/[^/]+/\S+|\S+)"
)
GID_ENV = re.compile(r"NCCL_IB_GID_INDEX set by environment to (-?\d+)")
GID_QP = re.compile(r"\bGID (\d+) \(")
ROCE_V2_GID = re.compile(r"localGid ::ffff:\d+\.\d+\.\d+\.\d+")
"""An IPv4-mapped GID exists only on RoCE v2 ports."""
IB_AT_WORK = re.compile(r"NET/IB\w* ?: .*Got |Call to ibv_\w+ failed|ibv_\w+ failed")
"""A completion, an async event or a failed verbs call: NCCL's IB transport was at work."""
GDR_LINE = re.compile(
    r"(?:NET/(?P<net>\w[\w ]*?) ?: )?GPU Direct RDMA (?P<state>Enabled|Disabled) for "
    r"(?:GPU (?P<gpu>\d+) / )?HCA (?P<hca>\d+ '[^']*'|\S+)"
)
RETURNED = re.compile(r"NCCL INFO [\w/.]+:\d+ -> (\d+)")
NCCL_LINE = re.compile(r"NCCL (?:INFO|WARN|version)|ProcessGroupNCCL|NCCL error")
RDMA_TRANSPORTS = ("IB", "RoCE", "IB/RoCE", "OFI")

Transport = str
"""`IB`, `RoCE`, `IB/RoCE` (NCCL's IB transport; the log does not say which link layer), `OFI`
(the AWS OFI plugin, libfabric over EFA), `Socket`, `P2P/SHM` (nothing left the node:
connections inside it only, or a communicator on one node), or `unknown`."""


def family(network: str) -> str:
    """The transport a network's name stands for: `IB`, `OFI`, `Socket` or the name itself."""
    if re.fullmatch(r"IB(?:ext(?:_v\d+)?)?", network):
        return "IB"
    if network in ("AWS Libfabric", "Libfabric", "OFI"):
        return "OFI"
    return network


@dataclass(frozen=True)
class Finding:
    error: str
    line: int
    text: str
    meaning: str
    check: str
    failure: bool = True
    """False for a cause of a fall back to sockets that failed nothing by itself."""


@dataclass(frozen=True)
class LogReport:
    nccl_version: str | None
    network: str | None
    """The network NCCL chose, as it names it (`IB`, `IBext_v8`, `Socket`, ...)."""
    nodes: int | None
    ib_devices: dict[int, str]
    """NET/IB device index -> `mlx5_0:1/RoCE`."""
    connections: dict[str, int]
    """Connections per path kind: `NET/IB` (plugins' IB too), `NET/OFI`, `NET/Socket`, `P2P`,
    `SHM`, ... ."""
    gdr: bool | None
    """Whether RDMA traffic used (or may use) GPUDirect RDMA; None when the log does not say."""
    gid_index: int | None
    errors: tuple[Finding, ...] = field(default=())
    nccl_lines: int = 0
    ib_seen: bool = False
    """A NET/IB line (a device list, a completion) shows NCCL's IB transport at work."""
    roce_v2_gid: bool = False
    gdr_from: str | None = None
    """What `gdr` was read from: `connections` (the channel lines), `GPU-NIC pairs` (NCCL's
    per-pair decision) or `NICs` (what each NIC allows; a GPU far from its NIC may still go
    without)."""

    @property
    def transport(self) -> Transport:
        net = {k.removeprefix("NET/") for k in self.connections if k.startswith("NET/")}
        if net:
            return self._over(net.pop()) if len(net) == 1 else "unknown"
        chosen = family(self.network) if self.network else None
        if chosen is None and (self.ib_seen or self.ib_devices):
            chosen = "IB"
        if self._spans_nodes or not (self.connections or self.nodes):
            # Traffic between nodes whose channel lines are not in the log, or a log that
            # does not say it stayed on one node: what NCCL chose for such traffic.
            return self._over(chosen) if chosen else "unknown"
        return "P2P/SHM"

    def _over(self, network: str) -> Transport:
        if network == "IB":
            used = self.ib_devices.values()
            if used:
                return "RoCE" if all(d.endswith("/RoCE") for d in used) else "IB"
            return "RoCE" if self.roce_v2_gid else "IB/RoCE"
        return network if network in ("OFI", "Socket") else "unknown"

    @property
    def rdma(self) -> bool:
        """Every connection that left a host used RDMA and nothing failed."""
        return not self.failures and self.transport in (*RDMA_TRANSPORTS, "P2P/SHM")

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(e for e in self.errors if e.failure)

    @property
    def _spans_nodes(self) -> bool:
        return self.nodes is not None and self.nodes > 1

    @property
    def seen(self) -> bool:
        """The text has NCCL lines at all (a pasted message without its `NCCL WARN` counts)."""
        found = (self.connections, self.errors, self.ib_devices, self.network, self.nccl_version)
        return self.nccl_lines > 0 or any(found)


@dataclass
class _Reading:
    version: str | None = None
    network: str | None = None
    nodes: int | None = None
    gid: int | None = None
    devices: dict[int, str] = field(default_factory=dict)
    paths: Counter[str] = field(default_factory=Counter)
    gdr: list[bool] = field(default_factory=list)
    gdr_pairs: dict[str, bool] = field(default_factory=dict)
    gdr_nics: dict[str, bool] = field(default_factory=dict)
    errors: dict[str, Finding] = field(default_factory=dict)
    returned: dict[int, Finding] = field(default_factory=dict)
    traces: Counter[int] = field(default_factory=Counter)
    nccl_lines: int = 0
    ib_seen: bool = False
    roce_v2_gid: bool = False

    def read(self, number: int, raw: str) -> None:
        line = prefixes.strip(raw.strip())
        self.nccl_lines += bool(NCCL_LINE.search(line))
        if m := CHANNEL.search(line):
            self._channel(m[1])
            return
        self.version = self.version or _group(VERSION, line)
        self.network = _group(NETWORK, line) or self.network
        if m := NODES.search(line):
            self.nodes = max(self.nodes or 0, int(m[2]))
        if m := NET_USING.search(line):
            found = IB_DEVICE.findall(m[1])
            self.devices.update({int(d[0]): f"{d[1]}:{d[2]}/{d[3]}" for d in found})
        if (m := GID_ENV.search(line) or GID_QP.search(line)) and self.gid is None:
            self.gid = int(m[1])
        self.ib_seen = self.ib_seen or bool(IB_AT_WORK.search(line))
        self.roce_v2_gid = self.roce_v2_gid or bool(ROCE_V2_GID.search(line))
        if m := GDR_LINE.search(line):
            self._gdr_line(m)
        self._error(number, raw.strip(), line)

    def _channel(self, via: str) -> None:
        parts = via.split("/")
        if parts[0] != "NET":
            self.paths[parts[0]] += 1
            return
        network = family(parts[1])
        self.paths[f"NET/{network}"] += 1
        if network in RDMA_TRANSPORTS:
            self.gdr.append(any(p.startswith("GDRDMA") for p in parts[2:]))

    def _gdr_line(self, m: re.Match[str]) -> None:
        if m["net"] and family(m["net"]) == "Socket":
            return  # `NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'`: no RDMA at all
        enabled = m["state"] == "Enabled"
        if m["gpu"] is not None:
            self.gdr_pairs[f"{m['gpu']}/{m['hca']}"] = enabled
        else:
            self.gdr_nics[m["hca"]] = enabled

    def _gdr(self) -> tuple[bool | None, str | None]:
        if self.gdr:
            return all(self.gdr), "connections"
        if self.network is not None and family(self.network) == "Socket":
            return None, None  # no RDMA between nodes: the GPU-NIC lines do not apply
        if self.gdr_pairs:
            return all(self.gdr_pairs.values()), "GPU-NIC pairs"
        if self.gdr_nics:
            return all(self.gdr_nics.values()), "NICs"
        return None, None

    def _error(self, number: int, text: str, line: str) -> None:
        known = known_errors.match(line)
        if known is None and "NCCL WARN" in line:
            known = known_errors.UNKNOWN_WARN
            key = "NCCL WARN " + line.partition("NCCL WARN")[2].strip()
        else:
            key = known.name if known else ""
        if known is not None and key not in self.errors:
            self.errors[key] = Finding(
                known.name, number, text, known.meaning, known.check, known.failure
            )
        if (m := RETURNED.search(line)) and int(m[1]) in known_errors.RESULTS:
            code = known_errors.returned(int(m[1]))
            self.traces[int(m[1])] += 1
            finding = Finding(code.name, number, text, code.meaning, code.check)
            self.returned.setdefault(int(m[1]), finding)

    def report(self) -> LogReport:
        # A code passed up through several calls is a failure; a single trace can be a plugin
        # that declined to start (`net_ib.cc:852 -> 3` with NCCL_IB_DISABLE=1), then Socket.
        chains = [f for code, f in self.returned.items() if self.traces[code] > 1]
        found = tuple(self.errors.values())
        errors = found if any(e.failure for e in found) else found + tuple(chains)
        gdr, gdr_from = self._gdr()
        return LogReport(
            nccl_version=self.version,
            network=self.network,
            nodes=self.nodes,
            ib_devices=self.devices,
            connections=dict(sorted(self.paths.items())),
            gdr=gdr,
            gid_index=self.gid,
            errors=tuple(sorted(errors, key=lambda e: e.line)),
            nccl_lines=self.nccl_lines,
            ib_seen=self.ib_seen,
            roce_v2_gid=self.roce_v2_gid,
            gdr_from=gdr_from,
        )


def analyze(text: str) -> LogReport:
    reading = _Reading()
    for number, line in enumerate(text.splitlines(), 1):
        reading.read(number, line)
    return reading.report()


def _group(pattern: re.Pattern[str], line: str) -> str | None:
    m = pattern.search(line)
    return m[1] if m else None
