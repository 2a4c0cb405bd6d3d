"""Reading what an nccl-tests program (all_reduce_perf and the other *_perf) prints.

The output is a header (the parameters, then one `Rank ... on HOST device N [BUS] GPU NAME`
line per rank), a table and a footer (`Out of bounds values : 0 OK`, `Avg bus bandwidth : X`).
Its shape changed over the years, and this reads every shape seen in published runs:

- the table's columns come from its own header line: old versions have no `redop` (broadcast
  and reduce have no `redop` either, the others no meaningful `root`), old versions name the check
  column `error` and print the largest deviation there, new ones `#wrong` and print a count;
  `N/A` replaces either when the run skipped the check (`-c 0`);
- old rank lines have no `Group` field, and the bus id is `0x1b` or `0000:1b:00`;
- launchers and log collectors put their prefixes in front of every line (`[1,0]<stdout>:`
  under mpirun `--tag-output`, and the others fabric/prefixes.py takes off); pasted logs lose
  the `#`;
- sendrecv and alltoall print `N/A` for the in-place `#wrong` (they check only out-of-place);
- a soak repeats header and table: every table's rows are kept, in order, and each rank once.

Pure: text in, an `NcclTestsRun` out, or `Unreadable` naming the line it could not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabric import prefixes

PROGRAM = re.compile(r"\b([a-z_]+_perf)\b")
RANK = re.compile(
    r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)"
    r"\s+\[([^\]]*)\]\s+(.+?)\s*$"
)
OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|-?inf)")
HALF = ("time", "algbw", "busbw")
ERROR_TOLERANCE = 1e-3
"""An `error` column (older nccl-tests) holds the largest deviation from the expected result;
float sums deviate by rounding (1e-07), so only a deviation above this counts as wrong."""


class Unreadable(ValueError):
    """The text is not nccl-tests output, or a line of its table cannot be read."""


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    device: int
    bus: str
    gpu: str


@dataclass(frozen=True)
class Half:
    """One half of a table row: out-of-place or in-place. None where the program printed N/A."""

    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None


@dataclass(frozen=True)
class Row:
    size: int
    """Bytes."""
    count: int
    type: str
    halves: tuple[Half, ...]
    """Out-of-place, then in-place when the program prints both."""

    @property
    def busbw(self) -> float | None:
        """The better bus bandwidth of the halves, in GB/s."""
        values = [h.busbw for h in self.halves if h.busbw is not None]
        return max(values) if values else None


@dataclass(frozen=True)
class NcclTestsRun:
    program: str | None
    ranks: tuple[Rank, ...]
    rows: tuple[Row, ...]
    out_of_bounds: int | None
    avg_busbw: float | None

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.host for r in self.ranks))

    @property
    def wrong(self) -> int | None:
        """Wrong results over every row and the halves that were checked; None when no half
        was (N/A throughout: the check was not run)."""
        counts = [h.wrong for row in self.rows for h in row.halves if h.wrong is not None]
        return sum(counts) if counts else None

    def best(self) -> Row | None:
        """The row with the highest bus bandwidth (the large messages)."""
        rated = [r for r in self.rows if r.busbw is not None]
        return max(rated, key=lambda r: (r.busbw or 0.0, r.size)) if rated else None

    def series(self, size: int) -> list[float]:
        """The bus bandwidth of every repetition of `size`, in order (a soak repeats it)."""
        return [r.busbw for r in self.rows if r.size == size and r.busbw is not None]


def parse(text: str) -> NcclTestsRun:
    lines = [prefixes.strip(line.rstrip()) for line in text.splitlines()]
    program = next((m.group(1) for line in lines if (m := PROGRAM.search(line))), None)
    ranks: dict[int, Rank] = {}
    rows: list[Row] = []
    columns: list[str] | None = None
    out_of_bounds = avg = None
    for number, line in enumerate(lines, 1):
        if m := RANK.match(line.strip()):
            ranks[int(m[1])] = Rank(int(m[1]), m[2], int(m[3]), m[4], m[5])
        elif (found := _columns(line)) is not None:
            columns = found
        elif m := OUT_OF_BOUNDS.search(line):
            out_of_bounds = int(m[1])
        elif m := AVG_BUSBW.search(line):
            avg = _float(m[1])
        elif columns is not None and _is_row(line):
            rows.append(_row(line, columns, number))
    if not rows:
        raise Unreadable("no nccl-tests result table found (a header line with size and count)")
    return NcclTestsRun(program, tuple(ranks.values()), tuple(rows), out_of_bounds, avg)


def _columns(line: str) -> list[str] | None:
    """The column names when `line` is the table's header (`size count type ... busbw`)."""
    words = line.lstrip("#").split()
    if words[:2] != ["size", "count"] or "busbw" not in words:
        return None
    return words


def _is_row(line: str) -> bool:
    words = line.split()
    return bool(words) and words[0].isdigit() and len(words) > 3


def _row(line: str, columns: list[str], number: int) -> Row:
    words = line.split()
    if len(words) != len(columns):
        raise Unreadable(
            f"line {number}: {len(words)} fields where the table header has {len(columns)}: "
            f"{line.strip()!r}"
        )
    lead = columns.index("time")
    check = columns[lead + 3]
    halves = tuple(
        _half(words[start : start + 4], check, number) for start in range(lead, len(columns) - 3, 4)
    )
    try:
        return Row(int(words[0]), int(words[1]), words[2], halves)
    except ValueError:
        raise Unreadable(f"line {number}: size and count must be integers: {line!r}") from None


def _half(cells: list[str], check: str, number: int) -> Half:
    try:
        time, algbw, busbw = (_float(c) for c in cells[:3])
    except ValueError:
        raise Unreadable(f"line {number}: not a number among {' '.join(cells[:3])}") from None
    return Half(time, algbw, busbw, _wrong(cells[3], check, number))


def _wrong(cell: str, check: str, number: int) -> int | None:
    if cell == "N/A":
        return None
    try:
        value = float(cell)
    except ValueError:
        raise Unreadable(f"line {number}: {check} column holds {cell!r}") from None
    if check == "error":
        return int(value > ERROR_TOLERANCE)
    return int(value)


def _float(cell: str) -> float | None:
    if cell == "N/A":
        return None
    return float(cell)
