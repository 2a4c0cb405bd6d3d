"""`kube-rdma extender` serving its verbs with mutual TLS, over real HTTP with certificates from
certs/generate.py, its metrics on a port of their own; and refusing to serve a non-loopback
address without a client CA."""

from __future__ import annotations

import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from certs.generate import KeyPair, generate_ca, generate_client, generate_serving
from testbed.builders import nodes
from testbed.net import wait_healthy
from testbed.processes import Child

EXTENDER = [sys.executable, "-m", "kube_rdma_cli", "extender"]
FILTER = orjson.dumps({"Pod": nodes.pod("worker-0"), "NodeNames": ["gpu-1"]})


def write(directory: Path, name: str, pair: KeyPair) -> None:
    (directory / f"{name}.crt").write_bytes(pair.cert_pem)
    (directory / f"{name}.key").write_bytes(pair.key_pem)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    ca = generate_ca("kube-rdma extender CA")
    write(tmp_path, "tls", generate_serving(ca, ["localhost"], ["127.0.0.1"]))
    write(tmp_path, "client", generate_client(ca, "kube-scheduler"))
    write(tmp_path, "stranger", generate_client(generate_ca("another CA"), "kube-scheduler"))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    objects = [nodes.node("gpu-1", nodes.hgx()), nodes.pod("worker-0")]
    snapshot = {"apiVersion": "v1", "kind": "List", "items": objects}
    (tmp_path / "cluster.json").write_bytes(orjson.dumps(snapshot))
    return tmp_path


@dataclass
class Served:
    url: str
    metrics: str


@pytest.fixture
def served(files: Path) -> Iterator[Served]:
    argv = [*EXTENDER, "--cluster-snapshot", str(files / "cluster.json"), "--port", "0"]
    argv += ["--tls-cert-file", str(files / "tls.crt"), "--tls-key-file", str(files / "tls.key")]
    argv += ["--client-ca", str(files / "ca.crt")]
    with Child(argv) as child:
        url = child.stderr.wait_for(r"extender listening on (https://127\.0\.0\.1:\d+)").group(1)
        metrics = child.stderr.wait_for(
            r"extender metrics listening on (http://127\.0\.0\.1:\d+)"
        ).group(1)
        assert wait_healthy(metrics), child.stderr.text
        yield Served(url, metrics)
        child.process.terminate()
        assert child.wait() == 0, child.stderr.text


def client(files: Path, cert: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(files / "ca.crt"))
    if cert is not None:
        context.load_cert_chain(files / f"{cert}.crt", files / f"{cert}.key")
    return context


def call(url: str, data: bytes | None = None, context: ssl.SSLContext | None = None) -> str:
    """The status and body, or how the call was refused."""
    try:
        with urllib.request.urlopen(url, data=data, timeout=10, context=context) as response:
            return f"{response.status} {response.read().decode()[:40]}"
    except urllib.error.HTTPError as e:
        return f"{e.code}"
    except (urllib.error.URLError, ssl.SSLError, OSError) as e:
        return f"refused: {type(e).__name__}"


def test_only_clients_with_a_certificate_from_the_ca_are_served(
    files: Path, served: Served
) -> None:
    assert call(f"{served.url}/filter", FILTER, client(files, "client")).startswith("200 ")
    assert call(f"{served.url}/filter", FILTER, client(files, None)).startswith("refused")
    assert call(f"{served.url}/filter", FILTER, client(files, "stranger")).startswith("refused")
    assert call(f"{served.url}/bind", b"{}", client(files, None)).startswith("refused")


def test_metrics_have_their_own_port_without_the_verbs(files: Path, served: Served) -> None:
    assert call(f"{served.metrics}/metrics").startswith("200 ")
    assert call(f"{served.metrics}/readyz") == "200 ok\n"
    assert call(f"{served.metrics}/filter", FILTER) == "404"
    assert call(f"{served.metrics}/bind", b"{}") == "404"
    assert call(f"{served.url}/metrics", None, client(files, "client")) == "404"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXTENDER, *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--host", "0.0.0.0"],
            "--host 0.0.0.0 is not a loopback address: whoever reaches it could filter, "
            "preempt and bind; serve there only with mutual TLS",
        ),
        (
            ["--host", "10.1.2.3", "--tls-cert-file", "tls.crt", "--tls-key-file", "tls.key"],
            "--host 10.1.2.3 is not a loopback address",
        ),
        (
            ["--client-ca", "ca.crt"],
            "--client-ca needs --tls-cert-file and --tls-key-file",
        ),
    ],
    ids=["plain", "tls-without-client-ca", "client-ca-without-tls"],
)
def test_a_non_loopback_host_needs_a_client_ca(files: Path, flags: list[str], message: str) -> None:
    flags = [str(files / f) if f.endswith((".crt", ".key")) else f for f in flags]
    done = run("--cluster-snapshot", str(files / "cluster.json"), "--port", "0", *flags)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
