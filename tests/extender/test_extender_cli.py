"""`kube-rdma extender` with a cluster snapshot, and `kube-rdma explain` against it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from kube_rdma_cli.dispatch import main
from testbed.builders import nodes
from testbed.net import wait_healthy
from testbed.processes import Child


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    objects = [
        nodes.node("gpu-1", nodes.hgx()),
        nodes.node("gpu-2", nodes.hgx(down=(3,))),
        nodes.pod("worker-0"),
    ]
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


@pytest.fixture
def extender(snapshot: Path) -> Iterator[str]:
    """The extender on a port it picked (--port 0), as the URL its "listening on" line gives."""
    argv: list[str | Path] = [sys.executable, "-m", "kube_rdma_cli", "extender"]
    argv += ["--cluster-snapshot", snapshot]
    with Child([*argv, "--host", "127.0.0.1", "--port", "0"]) as child:
        said = child.stderr.wait_for(r"extender listening on (http://127\.0\.0\.1:(\d+))")
        assert int(said.group(2)) > 0
        assert wait_healthy(said.group(1)), child.stderr.text
        yield said.group(1)
        child.process.terminate()
        assert child.wait() == 0, child.stderr.text


def test_explain_prints_the_table(extender: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "team-a/worker-0", "--url", extender]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "pod team-a/worker-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, Ethernet",
        "nodes: 1 pass, 0 busy, 1 unsuitable",
    ]
    assert lines[4].split()[:3] == ["gpu-1", "pass", "10.00"]
    assert lines[5].endswith("rails down: mlx5_3; 7 of 8 Ethernet ports usable, pod needs 8")


def test_explain_json_and_errors(extender: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "team-a/worker-0", "--url", extender, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == {
        "pass": 1,
        "fail": 0,
        "unresolvable": 1,
    }
    assert main(["explain", "team-a/ghost", "--extender", extender]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"kube-rdma explain: asking the extender at {extender} (--extender)",
        f"kube-rdma explain: pod team-a/ghost does not exist (asked the extender at {extender}); "
        "check the name: kubectl get pod -n team-a ghost",
    ]
    assert main(["explain", "-n", "team-a", "worker-0", "--extender", extender, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pod"] == "team-a/worker-0"
    assert main(["explain", "-n", "team-b", "team-a/worker-0", "--extender", extender]) == 2
    assert capsys.readouterr().err == (
        "kube-rdma explain: give the pod as NAMESPACE/POD or -n NAMESPACE POD, not "
        "'team-a/worker-0' with -n team-b\n"
    )


def test_explain_at_a_url_nobody_answers_says_where_the_extender_listens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "a/b", "--extender", "http://127.0.0.1:9"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "kube-rdma explain: cannot reach the extender at http://127.0.0.1:9: [Errno 111] "
        "Connection refused; the extender listens on 127.0.0.1 in the scheduler pod: leave out "
        "--extender to reach it through the apiserver, or give --extender after `kubectl "
        "port-forward -n kube-rdma pod/POD 8888` (POD: the holder of Lease "
        "kube-rdma/rdma-scheduler: kubectl get lease -n kube-rdma rdma-scheduler)"
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"cluster.yaml": "- {kind: Node}\n"}, "object 1 (Node) has no metadata.name"),
        (
            {"cluster.yaml": "[]", "weights.yaml": "weights: {rate: -1}"},
            "weights.rate: Input should be greater than or equal to 0",
        ),
    ],
)
def test_bad_input_at_start_exits_2(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [
        sys.executable,
        "-m",
        "kube_rdma_cli",
        "extender",
        "--cluster-snapshot",
        str(tmp_path / "cluster.yaml"),
        "--port",
        "0",
    ]
    if "weights.yaml" in files:
        args += ["--weights", str(tmp_path / "weights.yaml")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("kube-rdma extender: ")
    assert done.stderr.count("\n") == 1
    assert message in done.stderr


def test_serves_https_with_the_same_tls_machinery(snapshot: Path, cert_dir: Path) -> None:
    import ssl
    import urllib.request

    argv: list[str | Path] = [sys.executable, "-m", "kube_rdma_cli", "extender"]
    argv += ["--cluster-snapshot", snapshot]
    tls: list[str | Path] = [
        "--tls-cert-file",
        cert_dir / "tls.crt",
        "--tls-key-file",
        cert_dir / "tls.key",
    ]
    with Child([*argv, "--host", "127.0.0.1", "--port", "0", *tls]) as child:
        port = child.stderr.wait_for(r"extender listening on https://127\.0\.0\.1:(\d+)")[1]
        context = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        with urllib.request.urlopen(f"https://localhost:{port}/readyz", context=context) as r:
            assert r.read() == b"ok\n"
        assert main(["explain", "team-a/worker-0", "--url", f"https://localhost:{port}",
                     "--cacert", str(cert_dir / "ca.crt"), "--json"]) == 0  # fmt: skip


def test_a_bad_dra_device_rule_is_refused_with_the_form_wanted(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text("[]")
    args = [sys.executable, "-m", "kube_rdma_cli", "extender", "--port", "0"]
    args += ["--cluster-snapshot", str(tmp_path / "cluster.yaml"), "--dra-device", "nic=dra.net"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "kube-rdma extender: error: argument --dra-device: 'nic=dra.net' is not "
        "KIND=DRIVER:ATTRIBUTE=VALUE with KIND gpu or nic (e.g. nic=dra.net:rdma=true)"
    )


def test_a_pod_without_namespace_needs_a_kubeconfig_to_take_it_from(
    extender: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["explain", "worker-0", "--extender", extender]) == 2
    assert capsys.readouterr().err.startswith(
        "kube-rdma explain: give the pod as NAMESPACE/POD or -n NAMESPACE POD: no kubeconfig to "
        "take the namespace from (Service host/port is not set. No kubeconfig either: "
    )
