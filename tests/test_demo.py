"""`make demo` works: certificates, the webhook over TLS patching an example review, and the
extender explaining, planning and binding a gang, then packing a smaller pod, on a cluster whose
nodes score differently; and a port the user names that is taken is said so, while one that
the last run left in TIME_WAIT is not. The demo writes its keys and logs under `tmp_path`."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from examples.demo import DECODE, apply_patch, closing, port_from
from kube_rdma.core.objects import Json

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def demo(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs the demo once, its certificates, keys and logs in `tmp_path`, not the checkout."""

    def run(**variables: str) -> subprocess.CompletedProcess[str]:
        return _demo(DEMO_DIR=str(tmp_path / "demo"), **variables)

    return run


def _demo(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEMO_")}
    return subprocess.run(
        [sys.executable, "-m", "examples.demo"],
        cwd=ROOT,
        env={**env, "DEMO_ONESHOT": "1", **variables},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


Demo = Callable[..., subprocess.CompletedProcess[str]]


def test_demo_runs_once_end_to_end(demo: Demo, tmp_path: Path) -> None:
    result = demo()
    assert result.returncode == 0, result.stderr
    out = result.stdout
    expected = [
        "1. webhook: examples/pytorchjob-worker-review.json -> allowed=True, JSON patch:",
        '{"op": "add", "path": "/spec/containers/0/securityContext", "value": ',
        "pod ml-training/llama-70b-worker-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, InfiniBand",
        "gang ml-training/llama-70b of 4 (PyTorchJob llama-70b: 1 Master + 3 Worker)",
        "nodes: 7 pass, 2 busy, 3 unsuitable",
        "gpu-02  pass        9.89   9.75          10.00     10.00        10.00\n",
        "gpu-03  pass        9.29   10.00         5.00      10.00        10.00\n",
        "gpu-09  pass        8.61   8.00          6.30      10.00        10.00\n",
        "gpu-05  unsuitable  -      -             -         -            -             rails down",
        "llama-70b-master-0: filter 1 pass, 0 busy, 11 unsuitable; prioritize gpu-07 10\n",
        "in the narrowest domain that holds all 4: leaf-2 (gpu-07, gpu-08, gpu-09, gpu-10)",
        "  llama-70b-master-0 -> gpu-07: bound\n",
        "  llama-70b-worker-2 -> gpu-09: bound\n",
        "prioritize gpu-04 10, gpu-01 9, gpu-02 9, gpu-05 9, gpu-03 8\n",
        "bind -> gpu-04 (bound)\n",
    ]
    assert [line for line in expected if line not in out] == []
    assert "{'" not in out  # no Python dicts
    assert f"certificates: {tmp_path}/demo/{{ca.crt,tls.crt,tls.key}}" in out
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [
        "ca.crt",
        "ca.key",
        "cluster.json",
        "extender.log",
        "tls.crt",
        "tls.key",
        "webhook.log",
    ]


def test_one_shot_says_the_services_stopped_and_what_to_run_next(
    demo: Demo, tmp_path: Path
) -> None:
    out = demo().stdout
    ending = out[out.index("\n4. ") :]
    d = tmp_path / "demo"
    assert ending.startswith(f"\n4. Stopped both services (DEMO_ONESHOT=1); logs in {d}/*.log.")
    assert "Serving" not in ending
    for line in [
        f"  kube-rdma webhook --tls-cert-file {d}/tls.crt --tls-key-file {d}/tls.key "
        "--profiles examples/profiles.yaml --namespaces-file examples/namespaces.yaml "
        "--host 127.0.0.1 --port 8443\n",
        f"  kube-rdma extender --cluster-snapshot {d}/cluster.json --host 127.0.0.1 --port 8888\n",
        "https://localhost:8443/mutate | python3 -c 'import base64, json, sys; ",
        "  kube-rdma explain ml-training/finetune-0 --url http://127.0.0.1:8888\n",
        "  kube-rdma validate weights examples/weights.yaml\n",
        "  kube-rdma diagnose examples/nccl-logs/socket-fallback.log\n",
        f"  kube-rdma simulate --cluster {d}/cluster.json --workload examples/workload.yaml\n",
    ]:
        assert line in ending, line


def test_serving_says_where_and_how_to_call_them() -> None:
    said = closing(40001, 40002, oneshot=False)
    assert said.startswith("\n4. Serving: webhook https://localhost:40001/mutate, extender ")
    assert f"https://localhost:40001/mutate | {DECODE}\n" in said
    assert "  kube-rdma explain ml-training/finetune-0 --url http://127.0.0.1:40002\n" in said
    assert "Stopped" not in said
    assert "  kube-rdma validate weights examples/weights.yaml\n" in said


def test_the_suggested_curl_prints_the_patch_decoded() -> None:
    answer = {"response": {"patch": base64.b64encode(b'[{"op": "add", "path": "/a", "value": 1}]')}}
    program = DECODE.removeprefix("python3 -c ").strip("'")
    done = subprocess.run(
        [sys.executable, "-c", program],
        input=json.dumps(answer, default=bytes.decode),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == '{"op": "add", "path": "/a", "value": 1}\n'


def test_the_patch_is_applied_without_a_test_library() -> None:
    document: Json = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"env": [{"name": "A"}]}]},
    }
    patch: list[Json] = [
        {"op": "add", "path": "/metadata/annotations", "value": {"a~b/c": "1"}},
        {"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "B"}},
        {"op": "replace", "path": "/spec/containers/0/env/0", "value": {"name": "Z"}},
        {"op": "remove", "path": "/metadata/annotations/a~0b~1c"},
        {"op": "add", "path": "/spec/containers/0/env/0", "value": {"name": "Y"}},
    ]
    assert apply_patch(document, patch) == {
        "metadata": {"name": "p", "annotations": {}},
        "spec": {"containers": [{"env": [{"name": "Y"}, {"name": "Z"}, {"name": "B"}]}]},
    }
    assert document["spec"]["containers"][0]["env"] == [{"name": "A"}]


@pytest.mark.parametrize(
    ("target", "installs"), [("demo", "-e ."), ("unit", "-e '.[test]'"), ("lint", "-e '.[test]'")]
)
def test_make_demo_installs_the_runtime_package_and_make_test_the_test_tools(
    tmp_path: Path, target: str, installs: str
) -> None:
    """From a fresh clone (no venv yet): what each target would install, without running it."""
    done = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path}/venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    installed = re.findall(r"pip install (?:-q )?\s*(-e .*)$", done.stdout, re.MULTILINE)
    assert installed == [installs], done.stdout


def test_the_ports_can_be_named(demo: Demo) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    result = demo(DEMO_PORT=str(free))
    assert result.returncode == 0, result.stderr
    assert f"--host 127.0.0.1 --port {free}\n" in result.stdout  # the command to start it
    assert f"https://localhost:{free}/mutate | python3" in result.stdout


def test_a_named_port_that_is_taken_is_said_so(demo: Demo, held_port: int) -> None:
    result = demo(DEMO_EXTENDER_PORT=str(held_port))
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        f"demo: port {held_port} (DEMO_EXTENDER_PORT) is taken by another process; stop it, set "
        "DEMO_EXTENDER_PORT to another port, or unset it to let the demo pick a free one\n",
    )


def _port_in_time_wait() -> int:
    """A port whose listener is gone and whose last connection, closed by the server side
    first (as a stopped service closes its own), sits in TIME_WAIT."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port: int = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            served, _ = listener.accept()
            served.close()
            client.recv(1)
    return port


def test_a_port_left_in_time_wait_by_the_last_run_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Ctrl-C on `DEMO_PORT=P make demo` leaves: the same command again may use P."""
    port = _port_in_time_wait()
    with socket.socket() as plain, pytest.raises(OSError, match="Address already in use"):
        plain.bind(("127.0.0.1", port))  # the scenario: a bind without SO_REUSEADDR is refused
    monkeypatch.setenv("DEMO_PORT", str(port))
    assert port_from("DEMO_PORT") == port


def test_no_named_port_lets_the_service_pick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEMO_PORT", raising=False)
    assert port_from("DEMO_PORT") == 0


@pytest.mark.parametrize("given", ["http", "0", "65536"])
def test_a_named_port_that_is_no_port_is_said_so(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_PORT", given)
    with pytest.raises(SystemExit) as refused:
        port_from("DEMO_PORT")
    assert str(refused.value) == f"demo: DEMO_PORT={given!r} is not a port number (1-65535)"
