"""Read the text of `nvidia-smi topo -m` into GPU-NIC PCIe levels, for the node agent.

`kube-rdma agent --topo-file FILE` takes this text where sysfs is not available. It is a matrix
printed for people, and its layout has changed with driver releases, so the parser reads it by
its header and refuses, with a line number, anything it would otherwise have to guess:

- The header names the link columns (`GPU0 ...`, then `NIC0 ...` or, from old drivers, device
  names like `mlx5_0`) and then the affinity columns, any of `CPU Affinity`, `NUMA Affinity` and
  `GPU NUMA ID` in the order it gives. Header cells contain spaces, so they are matched by their
  known names. Newer drivers map `NIC#` to device names in a "NIC Legend:" block after "Legend:".
- Rows printed by nvidia-smi are tab-separated, and the tabs carry the empty cells: GB200 trays
  print GPU rows with an empty `CPU Affinity` cell. nvidia-smi also pads with extra tabs: driver
  580 writes `0-15<TAB>0<TAB><TAB>N/A` (two tabs before `GPU NUMA ID`), older drivers
  `0-7<TAB><TAB>N/A<TAB><TAB>N/A`. So after the link cells each affinity column takes the next
  cell in header order, and the empty cells after it are padding while more cells remain than
  columns still to fill. NIC rows end in a run of empty cells: no affinity at all.
- Copies from docs and terminals have spaces instead of tabs, which lose empty cells; such a row
  is read as whitespace-separated tokens and must have every affinity cell or none.
- A terminal (and, with current drivers, a pipe) gets ANSI underline codes around the header; they
  are stripped everywhere.
- Very old drivers print `SOC` for what is now `SYS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kube_rdma.core.topology import Level

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU = re.compile(r"GPU\d+")
_NIC_ALIAS = re.compile(r"NIC\d+")
_DEVICE_NAME = re.compile(r"[A-Za-z]\w*\d")  # mlx5_0, mlx5_bond_0, bnxt_re0, NIC3
_NVLINK = re.compile(r"NV[1-9]\d*")
_LEVELS = {level.value: level for level in Level} | {"SOC": Level.SYS}
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_ID_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")  # 0-47,96-143
_LEGEND_ENTRY = re.compile(r"(NIC\d+):\s*(\S+)")
_NOT_AVAILABLE = ("", "N/A")
_HEADER_EXPECTED = "expected a header line with GPU columns (GPU0 GPU1 ...)"
_COLUMN_EXPECTED = (
    "GPU#, NIC#, a device name like mlx5_0, CPU Affinity, NUMA Affinity or GPU NUMA ID"
)
_LINK_EXPECTED = "X, NV#, PIX, PXB, PHB, NODE, SYS or SOC"
_LEVEL_EXPECTED = "PIX, PXB, PHB, NODE, SYS or SOC"


class TopoParseError(ValueError):
    """Text that is not a `nvidia-smi topo -m` matrix: the 1-based line and what was wrong."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class TopoGpu:
    index: int
    numa: int | None
    """From "NUMA Affinity"; None when absent, N/A, or several nodes (`0-1`)."""
    cpu_affinity: str | None
    """The raw "CPU Affinity" cell (`0-47,96-143`); None when absent or N/A."""


@dataclass(frozen=True)
class TopoMatrix:
    gpus: tuple[TopoGpu, ...]
    """In row order."""
    nics: tuple[str, ...]
    """Device names in column order, `NIC#` resolved through the NIC Legend."""
    pairs: tuple[tuple[int, str, Level], ...]
    """(gpu index, nic name, level) for every GPU and NIC, GPU-major, NICs in column order."""


@dataclass(frozen=True)
class _Header:
    line: int
    devices: tuple[str, ...]
    """GPU and NIC columns as printed."""
    affinity: tuple[str, ...]


@dataclass(frozen=True)
class _Row:
    line: int
    label: str
    links: tuple[str, ...]
    cpu_affinity: str | None
    numa: int | None


def parse_topo(text: str) -> TopoMatrix:
    """The matrix in `text`; raises TopoParseError naming the line it cannot read."""
    lines = [_ANSI.sub("", line).rstrip("\r") for line in text.split("\n")]
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise TopoParseError(1, "empty text, expected the output of nvidia-smi topo -m")
    header = _parse_header(lines[start], start + 1)
    end = next((i for i in range(start + 1, len(lines)) if _ends_matrix(lines[i])), len(lines))
    rows = _parse_rows(lines, start + 1, end, header)
    nics = _resolve_nics(header, _parse_nic_legend(lines, end))
    gpu_rows = [row for row in rows if _GPU.fullmatch(row.label)]
    nic_columns = [i for i, name in enumerate(header.devices) if not _GPU.fullmatch(name)]
    return TopoMatrix(
        gpus=tuple(TopoGpu(_gpu_index(row.label), row.numa, row.cpu_affinity) for row in gpu_rows),
        nics=nics,
        pairs=tuple(
            (_gpu_index(row.label), nic, _LEVELS[row.links[column]])
            for row in gpu_rows
            for column, nic in zip(nic_columns, nics, strict=True)
        ),
    )


def _gpu_index(label: str) -> int:
    return int(label.removeprefix("GPU"))


def _ends_matrix(line: str) -> bool:
    return line.strip() in ("Legend:", "NIC Legend:")


def _parse_header(text: str, line: int) -> _Header:
    tokens = text.split()
    if not _GPU.fullmatch(tokens[0]) or any(_is_link(token) for token in tokens):
        raise TopoParseError(line, f"{_HEADER_EXPECTED}, found {text.strip()!r}")
    devices: list[str] = []
    affinity: list[str] = []
    while tokens:
        name = next((n for n in _AFFINITY_COLUMNS if tokens[: len(n.split())] == n.split()), None)
        if name is not None:
            affinity.append(name)
            del tokens[: len(name.split())]
            continue
        token = tokens.pop(0)
        if affinity:
            raise TopoParseError(line, f"unexpected column {token!r} after the affinity columns")
        if not _DEVICE_NAME.fullmatch(token):
            raise TopoParseError(line, f"unexpected column {token!r}, expected {_COLUMN_EXPECTED}")
        devices.append(token)
    for column in devices + affinity:
        if (devices + affinity).count(column) > 1:
            raise TopoParseError(line, f"column {column} appears twice")
    return _Header(line, tuple(devices), tuple(affinity))


def _is_link(token: str) -> bool:
    return token == "X" or token in _LEVELS or bool(_NVLINK.fullmatch(token))


def _parse_rows(lines: list[str], start: int, end: int, header: _Header) -> list[_Row]:
    rows: dict[str, _Row] = {}
    for i in range(start, end):
        if not lines[i].strip():
            continue
        row = _parse_row(lines[i], i + 1, header)
        if row.label in rows:
            first = rows[row.label].line
            raise TopoParseError(row.line, f"duplicate row {row.label} (first on line {first})")
        rows[row.label] = row
    for column in header.devices:
        if _GPU.fullmatch(column) and column not in rows:
            raise TopoParseError(header.line, f"column {column} has no row")
    return list(rows.values())


def _parse_row(text: str, line: int, header: _Header) -> _Row:
    tabbed = "\t" in text
    label, *cells = [cell.strip() for cell in text.split("\t")] if tabbed else text.split()
    if label not in header.devices:
        raise TopoParseError(
            line, f"row {label!r} is not a column of the header on line {header.line}"
        )
    links = (_tabbed_links if tabbed else _spaced_links)(label, cells, header, line)
    for column, cell in zip(header.devices, links, strict=True):
        _check_link(label, column, cell, line)
    rest = cells[len(links) :]
    values = (
        _tabbed_affinity(label, rest, header, line)
        if tabbed
        else dict(zip(header.affinity, rest, strict=False))
    )
    _parse_numa(label, "GPU NUMA ID", values.get("GPU NUMA ID", ""), line)
    return _Row(
        line=line,
        label=label,
        links=links,
        cpu_affinity=_parse_cpu_affinity(label, values.get("CPU Affinity", ""), line),
        numa=_parse_numa(label, "NUMA Affinity", values.get("NUMA Affinity", ""), line),
    )


def _spaced_links(label: str, cells: list[str], header: _Header, line: int) -> tuple[str, ...]:
    """Whitespace-separated: no cell is empty, so the affinity cells are all there or none."""
    links, affinity = len(header.devices), len(header.affinity)
    if len(cells) not in (links, links + affinity):
        expected = f"{links} link cells"
        if affinity:
            expected += f" then {affinity} affinity cells or none"
        raise TopoParseError(line, f"{label} has {len(cells)} cells, expected {expected}")
    return tuple(cells[:links])


def _tabbed_links(label: str, cells: list[str], header: _Header, line: int) -> tuple[str, ...]:
    links = len(header.devices)
    present = next((i for i, cell in enumerate(cells[:links]) if not cell), min(len(cells), links))
    if present < links:
        raise TopoParseError(line, f"{label} has {present} link cells, expected {links}")
    return tuple(cells[:links])


def _tabbed_affinity(label: str, cells: list[str], header: _Header, line: int) -> dict[str, str]:
    """The cells after the links by affinity column, in header order: each column takes the
    next cell, and the empty cells after it are padding while more cells remain than columns
    still to fill. All empty (a NIC row) is no affinity at all."""
    if not any(cells):
        return {}
    values: dict[str, str] = {}
    at = 0
    for filled, column in enumerate(header.affinity):
        if at == len(cells):
            counted = f"{filled} of the {len(header.affinity)} affinity cells"
            names = ", ".join(header.affinity)
            raise TopoParseError(line, f"{label} has {counted} ({names}), expected all or none")
        values[column] = cells[at]
        at += 1
        to_fill = len(header.affinity) - filled - 1
        while at < len(cells) and not cells[at] and len(cells) - at > to_fill:
            at += 1
    extra = next((cell for cell in cells[at:] if cell), None)
    if extra is not None:
        raise TopoParseError(
            line, f"{label}: cell {extra!r} has no column in the header on line {header.line}"
        )
    return values


def _check_link(row: str, column: str, cell: str, line: int) -> None:
    where = f"{row} column {column}"
    if not _is_link(cell):
        raise TopoParseError(line, f"{where}: unknown link {cell!r}, expected {_LINK_EXPECTED}")
    if row == column and cell != "X":
        raise TopoParseError(line, f"{where}: {cell!r}, expected X where a device meets itself")
    if row != column and cell == "X":
        raise TopoParseError(line, f"{where}: X between two devices, expected a link")
    gpu_to_gpu = bool(_GPU.fullmatch(row) and _GPU.fullmatch(column))
    if row != column and not gpu_to_gpu and cell not in _LEVELS:
        message = f"{cell!r} is not a PCIe level, expected {_LEVEL_EXPECTED}"
        raise TopoParseError(line, f"{where}: {message}")


def _parse_cpu_affinity(label: str, cell: str, line: int) -> str | None:
    if cell in _NOT_AVAILABLE:
        return None
    if not _ID_LIST.fullmatch(cell):
        raise TopoParseError(
            line, f"{label}: CPU Affinity {cell!r} is not a CPU list like 0-47,96-143"
        )
    return cell


def _parse_numa(label: str, column: str, cell: str, line: int) -> int | None:
    if cell in _NOT_AVAILABLE:
        return None
    if not _ID_LIST.fullmatch(cell):
        raise TopoParseError(line, f"{label}: {column} {cell!r} is not a NUMA node id")
    return int(cell) if cell.isdigit() else None


def _parse_nic_legend(lines: list[str], end: int) -> dict[str, str]:
    """NIC# -> device name, from the "NIC Legend:" block; empty when there is none."""
    start = next((i for i in range(end, len(lines)) if lines[i].strip() == "NIC Legend:"), None)
    if start is None:
        return {}
    legend: dict[str, str] = {}
    for i in range(start + 1, len(lines)):
        text = lines[i].strip()
        entry = _LEGEND_ENTRY.fullmatch(text)
        if not text:
            continue
        if entry is None:
            expected = "expected a NIC Legend entry like 'NIC0: mlx5_0'"
            raise TopoParseError(i + 1, f"{expected}, found {text!r}")
        if entry[1] in legend or entry[2] in legend.values():
            raise TopoParseError(i + 1, f"{text!r} repeats a NIC or a name of the NIC Legend")
        legend[entry[1]] = entry[2]
    return legend


def _resolve_nics(header: _Header, legend: dict[str, str]) -> tuple[str, ...]:
    names: list[str] = []
    for column in header.devices:
        if _GPU.fullmatch(column):
            continue
        if _NIC_ALIAS.fullmatch(column) and column not in legend:
            raise TopoParseError(header.line, f"column {column} has no entry in the NIC Legend")
        name = legend.get(column, column)
        if name in names:
            raise TopoParseError(header.line, f"NIC {name} is named by two columns")
        names.append(name)
    return tuple(names)
