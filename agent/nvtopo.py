"""Read the text of `nvidia-smi topo -m` into GPU-NIC PCIe levels, for the node agent.

`kube-rdma agent --topo-file FILE` takes this text where sysfs is not available. It is a matrix
printed for people, and its layout has changed with driver releases, so the parser reads what the
variants share and refuses, with a line number, anything it would otherwise have to guess:

- Old drivers head NIC columns with the device name (`mlx5_0`); newer ones print `NIC0 NIC1 ...`
  and map them to names in a "NIC Legend:" block after the "Legend:" block.
- Cells are tab-separated, but nvidia-smi also uses tabs to align: depending on the driver a GPU row
  ends in `0-63<TAB>0<TAB><TAB>N/A` or `0-7<TAB><TAB>N/A<TAB><TAB>N/A`, and NIC rows end in a run of
  empty cells. Copies from docs and terminals have spaces instead. So a row is read as
  whitespace-separated tokens: link cells never contain spaces, and the affinity cells (`CPU
  Affinity`, `NUMA Affinity`, `GPU NUMA ID`, each optional) are counted, not located by tab stop.
  A row has either all of them or none (NIC rows); anything in between is ambiguous and an error.
- Header cells contain spaces, so they are matched by their known names.
- A terminal gets ANSI underline codes around the header; they are stripped everywhere.
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
    label, *cells = text.split()
    if label not in header.devices:
        raise TopoParseError(
            line, f"row {label!r} is not a column of the header on line {header.line}"
        )
    links, affinity = len(header.devices), len(header.affinity)
    if len(cells) not in (links, links + affinity):
        expected = f"{links} link cells"
        if affinity:
            expected += f" then {affinity} affinity cells or none"
        raise TopoParseError(line, f"{label} has {len(cells)} cells, expected {expected}")
    for column, cell in zip(header.devices, cells, strict=False):
        _check_link(label, column, cell, line)
    values = dict(zip(header.affinity, cells[links:], strict=False))  # all or none
    _parse_numa(label, "GPU NUMA ID", values.get("GPU NUMA ID", ""), line)
    return _Row(
        line=line,
        label=label,
        links=tuple(cells[:links]),
        cpu_affinity=_parse_cpu_affinity(label, values.get("CPU Affinity", ""), line),
        numa=_parse_numa(label, "NUMA Affinity", values.get("NUMA Affinity", ""), line),
    )


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
