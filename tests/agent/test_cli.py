"""`kube-rdma agent inspect` and the argument checks of `kube-rdma agent run`."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

import pytest

from kube_rdma_cli.dispatch import build_parser, main
from testbed.builders import gb300_tree, sysfs_tree
from testbed.builders.sysfs_tree import SysfsTree
from testbed.processes import Child

TOPOLOGIES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"
"""The documents the agent writes for the testbed's sysfs trees, pinned: a change to the
scan or the encoding shows here as a diff to review."""


def agent_run(kubeconfig: Path, sysfs: Path, *extra: str) -> argparse.Namespace:
    """`kube-rdma agent run` for node gpu-7, polling every 50 ms."""
    node = ["--node-name", "gpu-7", "--kubeconfig", str(kubeconfig), "--sysfs-root", str(sysfs)]
    return build_parser().parse_args(["agent", "run", *node, "--interval", "0.05", *extra])


def test_inspect_prints_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    assert main(["agent", "inspect", "--sysfs-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == (TOPOLOGIES / "hgx-8gpu-8nic.json").read_text()
    assert json.loads(out)["version"] == 1


def test_inspect_on_a_data_direct_tray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gb300_tree.gb300_node(tmp_path)
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--proc-root", "/nonexistent"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out == (TOPOLOGIES / "gb300-data-direct.json").read_text()
    assert captured.err == ""


def test_inspect_warns_of_an_unmatched_data_direct_function_and_prints_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gb300_tree.gb300_node(tmp_path)
    vpd = tmp_path / "bus/pci/devices/0008:03:00.0/vpd"
    SysfsTree.unreadable(vpd)
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--proc-root", "/nonexistent"]
    assert main(args) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert "dataDirect" not in document["nics"][1]
    assert [p["level"] for p in document["pairs"] if p["gpu"] == 0] == [
        "NODE", "NODE", "SYS", "SYS"
    ]  # fmt: skip
    assert [json.loads(line)["msg"] for line in captured.err.splitlines()] == [
        f"scan: 0008:03:00.0 (ConnectX-8 Data Direct): cannot read {vpd}: Is a directory; "
        "its NIC pairs with GPUs through the NIC's own function"
    ]


@pytest.mark.parametrize("made", [False, True], ids=["no-class-infiniband", "empty"])
def test_inspect_without_rdma_prints_the_document_and_says_why_it_is_empty(
    made: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "class" / "infiniband"
    if made:
        where.mkdir(parents=True)
    args = ["agent", "inspect", "--sysfs-root", str(tmp_path), "--proc-root", "/nonexistent"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["nics"] == []
    absent = "" if made else " (it does not exist)"
    assert captured.err == (
        f"kube-rdma agent inspect: no RDMA devices under {where}{absent}: this host has no RDMA "
        "NIC, its RDMA driver is not loaded (lsmod | grep -e mlx5_ib -e ib_uverbs), or this "
        "runs in a container without the host's /sys (mount it and pass --sysfs-root)\n"
    )


def test_inspect_unreadable_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path)
    (tmp_path / "class/infiniband/mlx4_0/ports/1/link_layer").write_text("Omni-Path\n")
    assert main(["agent", "inspect", "--sysfs-root", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"kube-rdma agent inspect: {tmp_path}/class/infiniband/mlx4_0/ports/1/link_layer: "
        "expected InfiniBand or Ethernet, got 'Omni-Path'\n"
    )


def test_inspect_missing_topo_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "topo.txt"
    assert (
        main(["agent", "inspect", "--sysfs-root", str(tmp_path), "--topo-file", str(missing)]) == 2
    )
    assert capsys.readouterr().err == (
        f"kube-rdma agent inspect: {missing}: cannot read: No such file or directory\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no node name: pass --node-name or set NODE_NAME"),
        (["--node-name", "n", "--interval", "0"], "--interval must be positive"),
    ],
)
def test_run_checks_its_arguments(
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert main(["agent", "run", *args]) == 2
    line = json.loads(capsys.readouterr().err.splitlines()[-1])
    assert line["level"] == "error"
    assert line["msg"].startswith(message)


async def test_run_publishes_through_a_kubeconfig(tmp_path: Path) -> None:
    import asyncio

    from agent.cli import _serve
    from testbed.fakeapi import FakeApiServer, eventually

    sysfs_tree.shared_nic_node(tmp_path / "sys")
    async with FakeApiServer() as api:
        api.create("nodes", {"metadata": {"name": "gpu-7"}})
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": api.host}}],
                    "users": [{"name": "agent", "user": {"token": "t"}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "agent"}}],
                    "current-context": "fake",
                }
            )
        )
        args = agent_run(kubeconfig, tmp_path / "sys")
        task = asyncio.create_task(_serve(args))

        def published() -> bool:
            labels = api.get("nodes", "gpu-7")["metadata"].get("labels") or {}
            return labels.get("kube-rdma.io/rdma-ready") == "true"

        await eventually(published, within=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    annotation = api.get("nodes", "gpu-7")["metadata"]["annotations"]["kube-rdma.io/topology"]
    assert annotation + "\n" == (TOPOLOGIES / "shared-nic-node.json").read_text()


def test_run_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """The signal is sent once the agent says it started: its handlers are in place by then."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    argv = [sys.executable, "-m", "kube_rdma_cli", "agent", "run", "--node-name", "n"]
    with Child([*argv, "--kubeconfig", kubeconfig, "--sysfs-root", tmp_path]) as agent:
        agent.stderr.wait_for('"msg":"agent started"')
        agent.process.send_signal(signal.SIGTERM)
        status = agent.wait()
        stderr = agent.stderr.close()
    assert status == 0, stderr
    assert '"msg":"agent stopped"' in stderr, stderr


async def test_run_taints_a_dra_device_through_a_kubeconfig(tmp_path: Path) -> None:
    """`--dra-device-taints on`: the agent's Node patch and a DeviceTaintRule for the NIC that
    is down, in a cluster serving DeviceTaintRule (1.37, resource.k8s.io/v1)."""
    import asyncio

    from agent.cli import _serve
    from testbed.builders.dra_slices import hgx_dranet_slice
    from testbed.fakeapi import FakeApiServer, device_taint_rules, eventually

    sysfs_tree.hgx_8gpu_8nic(tmp_path / "sys", down={2})
    async with FakeApiServer() as api:
        api.install("devicetaintrules", device_taint_rules("1.37"))
        api.create("nodes", {"metadata": {"name": "gpu-7"}})
        api.create("resourceslices", hgx_dranet_slice("gpu-7"))
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        args = agent_run(kubeconfig, tmp_path / "sys", "--dra-device-taints", "on")
        task = asyncio.create_task(_serve(args))
        await eventually(lambda: len(api.objects("devicetaintrules")) == 1, within=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (rule,) = api.objects("devicetaintrules")
    assert rule["spec"]["deviceSelector"]["device"] == "pci-0000-4b-00-0"
