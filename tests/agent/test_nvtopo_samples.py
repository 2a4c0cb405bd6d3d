"""The samples in topo_texts/: outputs of `nvidia-smi topo -m` in each layout it has had."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.nvtopo import TopoGpu, TopoMatrix, TopoParseError, parse_topo
from kube_rdma.core.topology import Level

TEXTS = Path(__file__).parent / "topo_texts"

Pairs = tuple[tuple[int, str, Level], ...]


def _pairs(nics: tuple[str, ...], rows: dict[int, str]) -> Pairs:
    """Pairs from one line of levels per GPU, NICs in column order."""
    return tuple(
        (gpu, nic, Level(level))
        for gpu, levels in rows.items()
        for nic, level in zip(nics, levels.split(), strict=True)
    )


def _gpus(numa: Sequence[int | None], cpus: Sequence[str | None]) -> tuple[TopoGpu, ...]:
    return tuple(TopoGpu(i, n, c) for i, (n, c) in enumerate(zip(numa, cpus, strict=True)))


H100_NICS = tuple(f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11, 1, 7))
A100_NICS = tuple(f"mlx5_{i}" for i in range(10))
H100_CPUS = ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4
A100_CPUS = ["48-63,176-191", "16-31,144-159", "112-127,240-255", "80-95,208-223"]
GRACE_NICS = tuple(f"mlx5_{i}" for i in range(6))
GRACE_PAIRS = {
    0: "NODE NODE SYS SYS NODE SYS",
    1: "NODE NODE SYS SYS NODE SYS",
    2: "SYS SYS NODE NODE SYS NODE",
    3: "SYS SYS NODE NODE SYS NODE",
}

EXPECTED = {
    # 8 GPUs, 8 rail NICs (GPU i is PIX with NIC i) and 2 storage NICs, through the NIC Legend.
    "dgx_h100_nic_legend": TopoMatrix(
        gpus=_gpus([0, 0, 0, 0, 1, 1, 1, 1], H100_CPUS),
        nics=H100_NICS,
        pairs=_pairs(
            H100_NICS,
            {
                0: "PIX  NODE NODE NODE SYS  SYS  SYS  SYS  NODE SYS",
                1: "NODE PIX  NODE NODE SYS  SYS  SYS  SYS  NODE SYS",
                2: "NODE NODE PIX  NODE SYS  SYS  SYS  SYS  NODE SYS",
                3: "NODE NODE NODE PIX  SYS  SYS  SYS  SYS  NODE SYS",
                4: "SYS  SYS  SYS  SYS  PIX  NODE NODE NODE SYS  NODE",
                5: "SYS  SYS  SYS  SYS  NODE PIX  NODE NODE SYS  NODE",
                6: "SYS  SYS  SYS  SYS  NODE NODE PIX  NODE SYS  NODE",
                7: "SYS  SYS  SYS  SYS  NODE NODE NODE PIX  SYS  NODE",
            },
        ),
    ),
    # Old driver: mlx5_N columns, no legend; two GPUs and two NICs per PCIe switch.
    "dgx_a100_old_mlx5": TopoMatrix(
        gpus=_gpus([3, 3, 1, 1, 7, 7, 5, 5], [cpu for cpu in A100_CPUS for _ in (0, 1)]),
        nics=A100_NICS,
        pairs=_pairs(
            A100_NICS,
            {
                0: "PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
                1: "PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
                2: "SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
                3: "SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
                4: "SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
                5: "SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
                6: "SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
                7: "SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
            },
        ),
    ),
    # Copied from a terminal: spaces, no tabs.
    "pcie_4gpu_spaces": TopoMatrix(
        gpus=_gpus([0, 0, 1, 1], ["0-31,64-95"] * 2 + ["32-63,96-127"] * 2),
        nics=("mlx5_0", "mlx5_1"),
        pairs=_pairs(
            ("mlx5_0", "mlx5_1"), {0: "PXB SYS", 1: "PXB SYS", 2: "SYS PIX", 3: "SYS PXB"}
        ),
    ),
    "ansi_underline_2gpu": TopoMatrix(
        gpus=_gpus([0, 1], ["0-31", "32-63"]),
        nics=("mlx5_0", "mlx5_1"),
        pairs=_pairs(("mlx5_0", "mlx5_1"), {0: "PHB SYS", 1: "SYS PHB"}),
    ),
    "bonded_roce": TopoMatrix(
        gpus=_gpus([0, 0, 1, 1], ["0-31,64-95"] * 2 + ["32-63,96-127"] * 2),
        nics=("mlx5_bond_0", "mlx5_bond_1"),
        pairs=_pairs(
            ("mlx5_bond_0", "mlx5_bond_1"),
            {0: "PIX SYS", 1: "PXB SYS", 2: "SYS PIX", 3: "SYS PXB"},
        ),
    ),
    "no_nics_2gpu": TopoMatrix(gpus=_gpus([0, 0], ["0-23", "0-23"]), nics=(), pairs=()),
    # NUMA Affinity N/A; the row is `0-7<TAB><TAB>N/A<TAB><TAB>N/A`.
    "single_gpu_vm": TopoMatrix(
        gpus=(TopoGpu(0, None, "0-7"),), nics=("mlx5_0",), pairs=((0, "mlx5_0", Level.PHB),)
    ),
    # No NUMA Affinity column at all; SOC is read as SYS.
    "legacy_soc_p100": TopoMatrix(
        gpus=_gpus([None] * 4, ["0-13,28-41"] * 2 + ["14-27,42-55"] * 2),
        nics=("mlx5_0", "mlx5_1"),
        pairs=_pairs(
            ("mlx5_0", "mlx5_1"), {0: "PIX SYS", 1: "PHB SYS", 2: "SYS PHB", 3: "SYS PIX"}
        ),
    ),
    # GPU NUMA ID holds numbers here; NUMA Affinity is the CPU side's node.
    "grace_4gpu_gpu_numa_id": TopoMatrix(
        gpus=_gpus([0, 0, 1, 1], ["0-71", "0-71", "72-143", "72-143"]),
        nics=GRACE_NICS,
        pairs=_pairs(GRACE_NICS, GRACE_PAIRS),
    ),
    # A GB200 tray seen from a cpuset of the first Grace only: GPU2 and GPU3 have an empty CPU
    # Affinity cell (and, as every GPU row, an extra tab before GPU NUMA ID, here N/A).
    "gb200_tray_empty_cpu_affinity": TopoMatrix(
        gpus=_gpus([0, 0, 1, 1], ["0-71", "0-71", None, None]),
        nics=GRACE_NICS,
        pairs=_pairs(GRACE_NICS, GRACE_PAIRS),
    ),
    # Captured from an H200 host (driver 580): one GPU, no RDMA NICs, the header underlined even
    # when piped.
    "h200_1gpu_no_nics": TopoMatrix(gpus=(TopoGpu(0, 0, "0-15"),), nics=(), pairs=()),
}

DAMAGED = {
    # The GB200 text with GPU2's last link cell cut out: its empty CPU Affinity cell must not
    # be taken for the missing link.
    "gb200_tray_damaged": "line 4: GPU2 has 9 link cells, expected 10",
}


def test_every_sample_has_an_expectation() -> None:
    assert sorted(path.stem for path in TEXTS.glob("*.txt")) == sorted(EXPECTED | DAMAGED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_outputs(name: str) -> None:
    assert parse_topo((TEXTS / f"{name}.txt").read_text()) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_samples_are_refused(name: str) -> None:
    with pytest.raises(TopoParseError) as caught:
        parse_topo((TEXTS / f"{name}.txt").read_text())
    assert str(caught.value) == DAMAGED[name]


def test_samples_are_written_the_way_nvidia_smi_writes_them() -> None:
    """Guards the variants the samples exist for against an editor 'fixing' them."""
    assert "\t0\t\tN/A\nGPU1\t" in (TEXTS / "dgx_h100_nic_legend.txt").read_text()
    assert " X \t\t\t\t\n" in (TEXTS / "dgx_h100_nic_legend.txt").read_text()
    assert "\t" not in (TEXTS / "pcie_4gpu_spaces.txt").read_text()
    assert "\x1b[4m" in (TEXTS / "ansi_underline_2gpu.txt").read_text()
    assert "\t0-7\t\tN/A\t\tN/A\n" in (TEXTS / "single_gpu_vm.txt").read_text()
    gb200 = (TEXTS / "gb200_tray_empty_cpu_affinity.txt").read_text()
    assert gb200.startswith("\t\x1b[4mGPU0\tGPU1\t")
    assert "\tGPU NUMA ID\x1b[0m\n" in gb200
    assert "\tSYS\tNODE\t\t1\t\tN/A\nGPU3\t" in gb200
    assert "\t0-71\t0\t\tN/A\n" in gb200
    assert " X \t\t\t\t\n" in gb200
    assert "GPU0\t X \t0-15\t0\t\tN/A\n" in (TEXTS / "h200_1gpu_no_nics.txt").read_text()
