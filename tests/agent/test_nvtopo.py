"""`nvidia-smi topo -m` text, case by case: layouts, affinity cells, and refused input."""

from __future__ import annotations

import pytest

from agent.nvtopo import TopoGpu, TopoMatrix, TopoParseError, parse_topo
from kube_rdma.core.topology import Level

HEADER = "GPU0 GPU1 NIC0 CPU Affinity NUMA Affinity"
GPU0 = "GPU0 X NV4 PIX 0-15 0"
GPU1 = "GPU1 NV4 X SYS 16-31 1"
NIC0 = "NIC0 PIX SYS X"


def _text(*matrix: str, legend: tuple[str, ...] = ("NIC0: mlx5_0",)) -> str:
    """The matrix lines, then the legends; after 4 matrix lines the first entry is line 12."""
    legends = ["", "Legend:", "", "  X    = Self", "", "NIC Legend:", ""]
    return "\n".join([*matrix, *legends, *(f"  {entry}" for entry in legend), ""])


SMALL = TopoMatrix(
    gpus=(TopoGpu(0, 0, "0-15"), TopoGpu(1, 1, "16-31")),
    nics=("mlx5_0",),
    pairs=((0, "mlx5_0", Level.PIX), (1, "mlx5_0", Level.SYS)),
)


def test_small_text_parses() -> None:
    assert parse_topo(_text(HEADER, GPU0, GPU1, NIC0)) == SMALL


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "\x1b[4mGPU0\x1b[0m \x1b[4mGPU1\x1b[0m \x1b[4mNIC0\x1b[0m "
            "\x1b[4mCPU Affinity\x1b[0m \x1b[4mNUMA Affinity\x1b[0m\n"
            f"\x1b[1mGPU0\x1b[0m X NV4 PIX 0-15 0\n{GPU1}\n{NIC0}\n\nNIC Legend:\n  NIC0: mlx5_0\n",
            id="ansi-per-cell",
        ),
        pytest.param(_text(HEADER, GPU0, GPU1, NIC0).replace("\n", "\r\n"), id="crlf"),
        pytest.param(_text(HEADER, GPU0, GPU1), id="nic-rows-absent"),
        pytest.param(
            "\n".join(
                [
                    "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity",
                    "GPU0\t X \tNV4\tPIX\t0-15\t\t0",
                    "GPU1\tNV4\t X \tSYS\t16-31\t\t1",
                    "NIC0\tPIX\tSYS\t X \t\t\t",
                    "",
                    "NIC Legend:",
                    "  NIC0: mlx5_0",
                ]
            ),
            id="tabs-with-alignment-tabs",
        ),
    ],
)
def test_layout_variants_read_the_same(text: str) -> None:
    assert parse_topo(text) == SMALL


def test_old_format_without_legend_block() -> None:
    text = "GPU0 mlx5_0 mlx5_1 CPU Affinity\nGPU0 X PIX SOC 0-7\nmlx5_0 PIX X SOC\n"
    assert parse_topo(text) == TopoMatrix(
        gpus=(TopoGpu(0, None, "0-7"),),
        nics=("mlx5_0", "mlx5_1"),
        pairs=((0, "mlx5_0", Level.PIX), (0, "mlx5_1", Level.SYS)),
    )


@pytest.mark.parametrize(
    ("cells", "numa", "cpu"),
    [
        ("0-15 0", 0, "0-15"),
        ("0-15 12", 12, "0-15"),
        ("0-15 0-1", None, "0-15"),
        ("0-15 0,2", None, "0-15"),
        ("N/A N/A", None, None),
        ("", None, None),
        ("0,2,4-7 N/A", None, "0,2,4-7"),
    ],
)
def test_affinity_cells(cells: str, numa: int | None, cpu: str | None) -> None:
    text = f"GPU0 CPU Affinity NUMA Affinity\nGPU0 X {cells}\n"
    assert parse_topo(text).gpus == (TopoGpu(0, numa, cpu),)


TABBED_HEADER = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"


@pytest.mark.parametrize(
    ("cells", "numa", "cpu"),
    [
        pytest.param("0-15\t0\t\tN/A", 0, "0-15", id="extra-tab-before-gpu-numa-id"),
        pytest.param("0-7\t\tN/A\t\tN/A", None, "0-7", id="padding-after-every-value"),
        pytest.param("\t1\t\tN/A", 1, None, id="empty-cpu-affinity"),
        pytest.param("\t\t\t2", None, None, id="empty-cpu-and-numa-affinity"),
        pytest.param("0-71\t\t\t2", None, "0-71", id="empty-numa-affinity"),
        pytest.param("0-71\t0\t2", 0, "0-71", id="no-padding"),
        pytest.param("0-71\t0\t\t2\t\t", 0, "0-71", id="trailing-tabs"),
        pytest.param("\t\t\t", None, None, id="all-empty"),
        pytest.param("", None, None, id="none"),
    ],
)
def test_tabbed_affinity_cells(cells: str, numa: int | None, cpu: str | None) -> None:
    text = f"{TABBED_HEADER}\nGPU0\t X \t{cells}\n"
    assert parse_topo(text).gpus == (TopoGpu(0, numa, cpu),)


@pytest.mark.parametrize(
    ("header", "cells", "numa", "cpu"),
    [
        ("NUMA Affinity\tCPU Affinity", "1\t0-7", 1, "0-7"),
        ("GPU NUMA ID\tNUMA Affinity", "2\t\t1", 1, None),
        ("NUMA Affinity", "3", 3, None),
        ("CPU Affinity", "0-7", None, "0-7"),
    ],
)
def test_affinity_columns_in_the_order_the_header_gives(
    header: str, cells: str, numa: int | None, cpu: str | None
) -> None:
    text = f"\tGPU0\t{header}\nGPU0\t X \t{cells}\n"
    assert parse_topo(text).gpus == (TopoGpu(0, numa, cpu),)


def test_error_carries_line_and_message() -> None:
    with pytest.raises(TopoParseError) as caught:
        parse_topo(_text(HEADER, GPU0, GPU1, "NIC0 PIX SYS Y"))
    assert isinstance(caught.value, ValueError)
    assert (caught.value.line, caught.value.message) == (
        4,
        "NIC0 column NIC0: unknown link 'Y', expected X, NV#, PIX, PXB, PHB, NODE, SYS or SOC",
    )


LEGEND_ERROR = "expected a NIC Legend entry like 'NIC0: mlx5_0'"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            "", "line 1: empty text, expected the output of nvidia-smi topo -m", id="empty"
        ),
        pytest.param(
            "\n  \n\t\n",
            "line 1: empty text, expected the output of nvidia-smi topo -m",
            id="blank",
        ),
        pytest.param(
            "No devices were found\n",
            "line 1: expected a header line with GPU columns (GPU0 GPU1 ...), "
            "found 'No devices were found'",
            id="no-gpus",
        ),
        pytest.param(
            _text(GPU0, GPU1, NIC0),
            "line 1: expected a header line with GPU columns (GPU0 GPU1 ...), "
            "found 'GPU0 X NV4 PIX 0-15 0'",
            id="no-header",
        ),
        pytest.param(
            _text("GPU0 GPU1 NIC0 CPU Afinity", GPU0, GPU1, NIC0),
            "line 1: unexpected column 'CPU', expected GPU#, NIC#, a device name like mlx5_0, "
            "CPU Affinity, NUMA Affinity or GPU NUMA ID",
            id="misspelt-header",
        ),
        pytest.param(
            _text("GPU0 GPU1 CPU Affinity NIC0", GPU0, GPU1, NIC0),
            "line 1: unexpected column 'NIC0' after the affinity columns",
            id="column-after-affinity",
        ),
        pytest.param(
            _text("GPU0 GPU1 GPU1 NIC0 CPU Affinity NUMA Affinity", GPU0),
            "line 1: column GPU1 appears twice",
            id="duplicate-column",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X 16-31 1", NIC0),
            "line 3: GPU1 has 4 cells, expected 3 link cells then 2 affinity cells or none",
            id="missing-link-cell",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X SYS 16-31", NIC0),
            "line 3: GPU1 has 4 cells, expected 3 link cells then 2 affinity cells or none",
            id="one-affinity-cell-of-two",
        ),
        pytest.param(
            "GPU0 GPU1\nGPU0 X NV4\nGPU1 NV4 X 0-7\n",
            "line 3: GPU1 has 3 cells, expected 2 link cells",
            id="extra-cell-without-affinity-columns",
        ),
        pytest.param(
            "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNV4\t\t0-7\n",
            "line 2: GPU0 has 2 link cells, expected 3",
            id="tabbed-empty-link-cell",
        ),
        pytest.param(
            "\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV4\n",
            "line 2: GPU0 has 2 link cells, expected 3",
            id="tabbed-short-row",
        ),
        pytest.param(
            "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\n",
            "line 2: GPU0 column NIC0: unknown link '0-7', "
            "expected X, NV#, PIX, PXB, PHB, NODE, SYS or SOC",
            id="tabbed-missing-link-cell",
        ),
        pytest.param(
            "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\n",
            "line 2: GPU0 has 1 of the 2 affinity cells (CPU Affinity, NUMA Affinity), "
            "expected all or none",
            id="tabbed-one-affinity-cell-of-two",
        ),
        pytest.param(
            "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\t0\t5\n",
            "line 2: GPU0: cell '5' has no column in the header on line 1",
            id="tabbed-extra-cell",
        ),
        pytest.param(
            "\tGPU0\tGPU1\nGPU0\t X \tNV4\t\t0-7\n",
            "line 2: GPU0: cell '0-7' has no column in the header on line 1",
            id="tabbed-cell-without-affinity-columns",
        ),
        pytest.param(
            "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t\tnode1\n",
            "line 2: GPU0: NUMA Affinity 'node1' is not a NUMA node id",
            id="tabbed-numa-name",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X FOO 16-31 1", NIC0),
            "line 3: GPU1 column NIC0: unknown link 'FOO', "
            "expected X, NV#, PIX, PXB, PHB, NODE, SYS or SOC",
            id="unknown-link",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV0 X SYS 16-31 1", NIC0),
            "line 3: GPU1 column GPU0: unknown link 'NV0', "
            "expected X, NV#, PIX, PXB, PHB, NODE, SYS or SOC",
            id="nvlink-of-zero-links",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X NV2 16-31 1", NIC0),
            "line 3: GPU1 column NIC0: 'NV2' is not a PCIe level, "
            "expected PIX, PXB, PHB, NODE, SYS or SOC",
            id="nvlink-to-a-nic",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 NV4 SYS 16-31 1", NIC0),
            "line 3: GPU1 column GPU1: 'NV4', expected X where a device meets itself",
            id="diagonal-not-x",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 X X SYS 16-31 1", NIC0),
            "line 3: GPU1 column GPU0: X between two devices, expected a link",
            id="x-off-diagonal",
        ),
        pytest.param(
            _text(HEADER, GPU0, GPU1, NIC0, legend=()),
            "line 1: column NIC0 has no entry in the NIC Legend",
            id="nic-missing-from-legend",
        ),
        pytest.param(
            f"{HEADER}\n{GPU0}\n{GPU1}\n{NIC0}\n\nLegend:\n\n  X    = Self\n",
            "line 1: column NIC0 has no entry in the NIC Legend",
            id="no-nic-legend-block",
        ),
        pytest.param(
            _text(HEADER, GPU0, GPU1, NIC0, legend=("NIC0 = mlx5_0",)),
            f"line 12: {LEGEND_ERROR}, found 'NIC0 = mlx5_0'",
            id="bad-legend-entry",
        ),
        pytest.param(
            _text(HEADER, GPU0, GPU1, NIC0, legend=("NIC0: mlx5_0", "NIC0: mlx5_1")),
            "line 13: 'NIC0: mlx5_1' repeats a NIC or a name of the NIC Legend",
            id="legend-repeats-a-nic",
        ),
        pytest.param(
            _text(HEADER, GPU0, GPU1, GPU0, NIC0),
            "line 4: duplicate row GPU0 (first on line 2)",
            id="duplicate-gpu-row",
        ),
        pytest.param(
            _text(HEADER, GPU0, NIC0),
            "line 1: column GPU1 has no row",
            id="gpu-without-row",
        ),
        pytest.param(
            _text(HEADER, GPU0, GPU1, "GPU2 SYS SYS SYS 0-15 0"),
            "line 4: row 'GPU2' is not a column of the header on line 1",
            id="row-without-column",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X SYS 0x0000ffff 1", NIC0),
            "line 3: GPU1: CPU Affinity '0x0000ffff' is not a CPU list like 0-47,96-143",
            id="cpu-mask",
        ),
        pytest.param(
            _text(HEADER, GPU0, "GPU1 NV4 X SYS 16-31 node1", NIC0),
            "line 3: GPU1: NUMA Affinity 'node1' is not a NUMA node id",
            id="numa-name",
        ),
        pytest.param(
            "GPU0 CPU Affinity NUMA Affinity GPU NUMA ID\nGPU0 X 0-7 0 two\n",
            "line 2: GPU0: GPU NUMA ID 'two' is not a NUMA node id",
            id="gpu-numa-id",
        ),
    ],
)
def test_unreadable_input_is_an_error(text: str, error: str) -> None:
    with pytest.raises(TopoParseError) as caught:
        parse_topo(text)
    assert str(caught.value) == error
