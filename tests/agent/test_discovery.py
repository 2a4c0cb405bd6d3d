"""sysfs and `nvidia-smi topo -m` together: the container case where sysfs shows no GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.discovery import DiscoveryError, discover
from agent.sysfs import scan
from kube_rdma.core.topology import Gdr
from kube_rdma_cli.dispatch import main
from testbed.builders import sysfs_tree

TEXTS = Path(__file__).parent / "topo_texts"


def test_topo_file_supplies_gpus_and_levels_sysfs_the_ports(tmp_path: Path) -> None:
    sysfs_tree.bonded_roce_node(tmp_path)  # sysfs knows mlx5_bond_0 (and one GPU)
    topology = discover(tmp_path, TEXTS / "bonded_roce.txt")
    assert topology.source == "nvidia-smi"
    assert [(g.index, g.pci, g.numa) for g in topology.gpus] == [
        (0, None, 0),
        (1, None, 0),
        (2, None, 1),
        (3, None, 1),
    ]
    assert [n.name for n in topology.nics] == ["mlx5_bond_0", "mlx5_bond_1"]
    from_sysfs = scan(tmp_path).nics[0]
    assert topology.nics[0] == from_sysfs, "NIC details still come from sysfs"
    assert topology.nics[1].model_dump(exclude_none=True) == {"name": "mlx5_bond_1", "ports": ()}
    assert [(p.gpu, p.nic, p.level.value) for p in topology.pairs] == [
        (0, "mlx5_bond_0", "PIX"),
        (0, "mlx5_bond_1", "SYS"),
        (1, "mlx5_bond_0", "PXB"),
        (1, "mlx5_bond_1", "SYS"),
        (2, "mlx5_bond_0", "SYS"),
        (2, "mlx5_bond_1", "PIX"),
        (3, "mlx5_bond_0", "SYS"),
        (3, "mlx5_bond_1", "PXB"),
    ]


def test_sysfs_alone_without_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    sysfs_tree.dual_port_ib_node(tmp_path)
    assert discover(tmp_path) == scan(tmp_path)


def test_nvidia_smi_runs_when_sysfs_has_no_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path / "sys")
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ncat {TEXTS / 'no_nics_2gpu.txt'}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    topology = discover(tmp_path / "sys")
    assert topology.source == "nvidia-smi"
    assert [g.index for g in topology.gpus] == [0, 1]
    assert [n.name for n in topology.nics] == ["mlx4_0"]
    assert topology.pairs == ()


def test_failing_nvidia_smi_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate' >&2\nexit 9\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    with pytest.raises(DiscoveryError) as error:
        discover(tmp_path)
    assert str(error.value) == (
        "nvidia-smi topo -m exited 9: NVIDIA-SMI has failed because it could not communicate"
    )


def test_inspect_with_topo_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--proc-root", str(tmp_path)]
    assert main([*args, "--topo-file", str(TEXTS / "no_nics_2gpu.txt")]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "version": 1,
        "minor": 2,
        "gpus": [{"index": 0, "numa": 0}, {"index": 1, "numa": 0}],
        "nics": [],
        "pairs": [],
        "source": "nvidia-smi",
        "gdr": {"peermem": False, "dmabuf": False},
    }


def test_the_gdr_paths_stay_when_nvidia_smi_gives_the_gpus(tmp_path: Path) -> None:
    sysfs_tree.trained_down_hgx_node(tmp_path / "sys")
    proc = sysfs_tree.driver_proc(tmp_path / "proc", sysfs_tree.OPEN_MODULE, "6.8.0-45-generic")
    topology = discover(tmp_path / "sys", TEXTS / "no_nics_2gpu.txt", proc)
    assert topology.source == "nvidia-smi"
    assert topology.gdr == Gdr(peermem=True, dmabuf=True)


def test_inspect_with_unreadable_topo_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "topo.txt"
    bad.write_text("\tGPU0\tNIC0\nGPU0\t X \tFAST\n")
    assert main(["agent", "inspect", "--sysfs-root", str(tmp_path), "--topo-file", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("kube-rdma agent inspect: line 2: ")


GB200_LEVELS = {  # GPU -> levels to mlx5_0 .. mlx5_5
    0: "NODE NODE SYS SYS NODE SYS",
    1: "NODE NODE SYS SYS NODE SYS",
    2: "SYS SYS NODE NODE SYS NODE",
    3: "SYS SYS NODE NODE SYS NODE",
}


def test_inspect_reads_a_gb200_tray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tabs, an underlined header, GPU rows with an empty CPU Affinity cell and the extra tab
    before GPU NUMA ID: the exact document, byte for byte."""
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--proc-root", str(tmp_path)]
    assert main([*args, "--topo-file", str(TEXTS / "gb200_tray_empty_cpu_affinity.txt")]) == 0
    document = {
        "version": 1,
        "minor": 2,
        "gpus": [{"index": i, "numa": i // 2} for i in range(4)],
        "nics": [{"name": f"mlx5_{n}", "ports": []} for n in range(6)],
        "pairs": [
            {"gpu": gpu, "nic": f"mlx5_{n}", "level": level}
            for gpu, levels in GB200_LEVELS.items()
            for n, level in enumerate(levels.split())
        ],
        "source": "nvidia-smi",
        "gdr": {"peermem": False, "dmabuf": False},
    }
    assert capsys.readouterr().out == json.dumps(document, separators=(",", ":")) + "\n"


def test_inspect_refuses_a_damaged_gb200_tray(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--topo-file"]
    assert main([*args, str(TEXTS / "gb200_tray_damaged.txt")]) == 2
    assert capsys.readouterr() == (
        "",
        "kube-rdma agent inspect: line 4: GPU2 has 9 link cells, expected 10\n",
    )


def test_a_topo_file_that_cannot_be_read_or_is_not_text(tmp_path: Path) -> None:
    sysfs_tree.bonded_roce_node(tmp_path / "sys")
    with pytest.raises(DiscoveryError) as error:
        discover(tmp_path / "sys", tmp_path)
    assert str(error.value) == f"{tmp_path}: cannot read: Is a directory"
    binary = tmp_path / "topo.bin"
    binary.write_bytes(b"\tGPU0\xff\n")
    with pytest.raises(DiscoveryError) as error:
        discover(tmp_path / "sys", binary)
    assert str(error.value) == (
        f"{binary}: not text (byte 5 is not UTF-8); give the output of `nvidia-smi topo -m` as "
        "it prints it"
    )


def test_nvidia_smi_that_cannot_start_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    (tmp_path / "nothing").mkdir()
    fake = tmp_path / "nothing" / "nvidia-smi"
    fake.write_text("not a program")
    fake.chmod(0o755)
    with pytest.raises(DiscoveryError) as error:
        discover(tmp_path)
    assert str(error.value).startswith("nvidia-smi topo -m failed: [Errno 8] Exec format error")
