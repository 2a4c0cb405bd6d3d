"""The `kube-rdma` command as a user meets it: every subcommand given bad input ends in one line
that says what is wrong, and a non-zero exit, never a traceback; help shows every default;
`--log-level` goes before or after the subcommand; options are never abbreviated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kube_rdma_cli import dispatch as cli

ROOT = Path(__file__).resolve().parents[2]


def kube_rdma(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    return subprocess.run(
        [sys.executable, "-m", "kube_rdma_cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**env, "NODE_NAME": "gpu-1"},
    )


def bad_inputs(tmp: Path, port: int) -> list[tuple[list[str], str]]:
    """(argv, words the one line must contain)."""
    (tmp / "binary").write_bytes(b"\x00\xff\xfe\x00garbage")
    (tmp / "broken.yaml").write_text("profiles: [\n")
    (tmp / "not-kubeconfig.yaml").write_text("hello: world\n")
    (tmp / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (tmp / "empty.yaml").write_text("kind: List\napiVersion: v1\nitems: []\n")
    snapshot = ["--cluster-snapshot", str(tmp / "empty.yaml")]
    kube_rdma("certs", "generate", "--service", "s", "--namespace", "n", "--out", str(tmp))
    tls = ["--tls-cert-file", str(tmp / "tls.crt"), "--tls-key-file", str(tmp / "tls.key")]
    return [
        (["extender", "--in-cluster"], "--kubeconfig"),
        (["extender", "--kubeconfig", str(tmp / "missing")], "no such file"),
        (["extender", "--kubeconfig", str(tmp / "not-kubeconfig.yaml")], "Kubernetes config"),
        (["agent", "run", "--kubeconfig", str(tmp / "missing")], "no such file"),
        (["agent", "inspect", "--topo-file", str(tmp / "binary")], "not text"),
        (["agent", "inspect", "--sysfs-root", str(tmp / "nonexistent")], "not a directory"),
        (["extender", *snapshot, "--port", str(port), "--host", "127.0.0.1"], "another process"),
        (["webhook", *tls, "--profiles", str(tmp / "broken.yaml")], "broken.yaml"),
        (["webhook", *tls, "--profiles", str(tmp / "missing.yaml")], "missing.yaml"),
        (["webhook", *tls, "--namespaces-file", str(tmp / "latin1.yaml")], "latin1.yaml"),
        (["extender", *snapshot, "--weights", str(tmp / "binary")], "binary"),
        (["explain", "team-a/x", "--url", f"http://127.0.0.1:{port}0"], "cannot reach"),
        (["nccl-conf", "--sysfs-root", str(tmp / "nonexistent"), "--out", str(tmp / "n")], "GID"),
        (["acceptance", "verdict", "--log", str(tmp / "missing.log")], "missing.log"),
        (
            [
                "acceptance",
                "render",
                "--profiles",
                str(tmp / "gone.yaml"),
                "--profile",
                "x",
                "--nodes",
                "a",
            ],
            "gone.yaml",
        ),
        (["diagnose", "--nccl-log", str(tmp / "missing.log")], "missing.log: no such file"),
        (["diagnose", "team-a/x", "--kubeconfig", str(tmp / "missing")], "no such file"),
        (["simulate", "--cluster", str(tmp / "gone.json"), "--generate", "jobs=5"], "gone.json"),
        (["snapshot", "--kubeconfig", str(tmp / "missing"), "--out", str(tmp / "s")], "no such"),
        (["validate", "profiles", str(tmp / "gone.yaml")], "gone.yaml"),
        (
            ["certs", "generate", "--service", "s", "--namespace", "n", "--out", "/proc/x/y"],
            "cannot write",
        ),
        (["extender", "--cluster-snapshot", str(tmp / "broken.yaml")], "broken.yaml"),
        (
            ["extender", *snapshot, "--percentage-of-nodes-to-score", "150"],
            "'150' is not a percentage from 0 to 100",
        ),
        (["agent", "run", "--kubeconfig", str(tmp / "tls.crt")], "is not a kubeconfig"),
        (["agent", "run", "--sysfs-root", str(tmp / "nonexistent")], "not a directory"),
    ]


def test_bad_input_never_shows_a_traceback(tmp_path: Path, held_port: int) -> None:
    failures = []
    for argv, words in bad_inputs(tmp_path, held_port):
        done = kube_rdma(*argv)
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()  # validate: stdout
        last = said[-1] if said else ""
        if done.returncode == 0 or "Traceback" in done.stderr + done.stdout or words not in last:
            failures.append(f"{argv}: exit {done.returncode}, last line {last!r}")
    assert failures == []


def test_services_say_listening_only_after_their_inputs_are_checked(tmp_path: Path) -> None:
    kube_rdma("certs", "generate", "--service", "s", "--namespace", "n", "--out", str(tmp_path))
    cert, key = str(tmp_path / "tls.crt"), str(tmp_path / "tls.key")
    tls = ["--tls-cert-file", cert, "--tls-key-file", key]
    port = ["--port", "0", "--host", "127.0.0.1"]
    failing = {
        "no cluster": ["extender", "--in-cluster", *port],
        "webhook, no cluster": ["webhook", *tls, "--in-cluster", *port],
        "no namespaces file": ["webhook", *tls, "--namespaces-file", str(tmp_path / "no"), *port],
        "agent, no cluster": ["agent", "run"],
    }
    said = {}
    for case, argv in failing.items():
        done = kube_rdma(*argv)
        claimed = "listening on" in done.stderr or "agent started" in done.stderr
        said[case] = (claimed, done.returncode)
    assert said == dict.fromkeys(said, (False, 2))


def test_help_shows_every_default() -> None:
    usage = kube_rdma("extender", "--help").stdout
    usage = usage[usage.index("options:") :]
    entries = {e.split()[0]: " ".join(e.split()) for e in re.split(r"\n  (?=-)", usage)[1:]}
    for option, default in [
        ("--port", "8888"),
        ("--host", "127.0.0.1"),
        ("--plan-timeout", "120.0"),
        ("--percentage-of-nodes-to-score", "100"),
    ]:
        assert f"(default: {default})" in entries[option], entries[option]


def test_log_level_goes_before_or_after_the_subcommand() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["--log-level", "debug", "explain", "x/y"]).log_level == "debug"
    assert parser.parse_args(["explain", "x/y", "--log-level", "warning"]).log_level == "warning"
    assert parser.parse_args(["explain", "x/y"]).log_level == "info"


def test_options_are_never_abbreviated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["extender", "--in-cluster", "--plan", "5"])
    assert "unrecognized arguments: --plan" in capsys.readouterr().err


def test_version_comes_from_the_package() -> None:
    assert kube_rdma("--version").stdout.strip() == f"kube-rdma {cli.version()}"
