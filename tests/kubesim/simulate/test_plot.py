"""`kube-rdma simulate --plot FILE.png` draws its chart, and says what to install without
matplotlib (the optional `plot` extra, which the test extra includes)."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from kube_rdma_cli.dispatch import main
from testbed.clustergen import write_snapshot
from tests.kubesim.simulate.clusters import leaf_node


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    write_snapshot([leaf_node(f"n-{i}", "a") for i in range(8)], path)
    return path


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG signature and its IHDR chunk."""
    head = path.read_bytes()[:24]
    assert (head[:8], head[12:16]) == (b"\x89PNG\r\n\x1a\n", b"IHDR")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_plot_draws_the_chart(
    cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chart = tmp_path / "out.png"
    argv = ["simulate", "--cluster", str(cluster), "--generate", "jobs=20,seed=3"]
    assert main([*argv, "--sweep", "binpack=0,4", "--plot", str(chart)]) == 0, capsys.readouterr()
    assert png_size(chart) == (1430, 495)  # 13 x 4.5 inches at 110 dpi


def test_plot_without_matplotlib_says_what_to_install(
    cluster: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else found(name, *a),
    )
    chart = tmp_path / "out.png"
    argv = ["simulate", "--cluster", str(cluster), "--generate", "jobs=20,seed=3"]
    assert main([*argv, "--plot", str(chart)]) == 2
    assert capsys.readouterr().err == (
        "kube-rdma simulate: --plot needs matplotlib: pip install 'kube-rdma[plot]' (or pip "
        "install matplotlib)\n"
    )
    assert not chart.exists()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/out.png", "--plot {p}: there is no folder {d}; create it, or give a path in one"),
        (".", "--plot {p}: is a folder; give a file name, e.g. {p}/chart.png"),
        (
            "out.txt",
            "--plot {p}: matplotlib does not write .txt files; end the name with one of .avif, "
            ".eps, .gif, .jpeg, .jpg, .pdf, .pgf, .png, .ps, .raw, .rgba, .svg, .svgz, .tif, "
            ".tiff, .webp (.png is the usual)",
        ),
    ],
)
def test_a_chart_that_could_not_be_written_is_refused_before_the_run(
    cluster: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
    message: str,
) -> None:
    chart = tmp_path / where
    argv = ["simulate", "--cluster", str(cluster), "--generate", "jobs=20,seed=3"]
    assert main([*argv, "--plot", str(chart)]) == 2
    out, err = capsys.readouterr()
    expected = message.format(p=chart, d=chart.parent)
    assert (out, err) == ("", f"kube-rdma simulate: {expected}\n")
