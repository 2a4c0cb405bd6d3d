"""The `kube-rdma` command as a user meets it: every subcommand given input it cannot use ends in
one line that says what is wrong and exit status 2, a failure found or met while running in exit
status 1, never a traceback; every subcommand's help shows every default; `--log-level` goes
before or after the subcommand; options are never abbreviated."""

from __future__ import annotations

import argparse
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


def subcommands() -> list[tuple[str, ...]]:
    """Every runnable subcommand, with its verb: ("webhook",), ("certs", "generate"), ..."""

    def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [path]
        return [leaf for n, p in subs[0].choices.items() for leaf in leaves(p, (*path, n))]

    return leaves(cli.build_parser(), ())


USAGE, FAILURE = 2, 1


def cases(tmp: Path, port: int) -> list[tuple[list[str], str, int]]:
    """(argv, words the one line must contain, exit status): input the command cannot use is
    2, whatever the subcommand; a failure found or met while running is 1."""
    (tmp / "binary").write_bytes(b"\x00\xff\xfe\x00garbage")
    (tmp / "broken.yaml").write_text("profiles: [\n")
    (tmp / "not-kubeconfig.yaml").write_text("hello: world\n")
    (tmp / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (tmp / "empty.yaml").write_text("kind: List\napiVersion: v1\nitems: []\n")
    snapshot = ["--cluster-snapshot", str(tmp / "empty.yaml")]
    kube_rdma("certs", "generate", "--service", "s", "--namespace", "n", "--out", str(tmp))
    tls = ["--tls-cert-file", str(tmp / "tls.crt"), "--tls-key-file", str(tmp / "tls.key")]
    certs = ["certs", "generate", "--service", "s", "--namespace", "n"]
    render = ["acceptance", "render", "--profile", "x", "--nodes", "a"]
    return [
        (["webhook"], "give --tls-cert-file and --tls-key-file, or --self-provision", USAGE),
        (["webhook", "--tls-cert-file", str(tmp / "tls.crt")], "--tls-key-file", USAGE),
        (["webhook", *tls, "--profiles", str(tmp / "broken.yaml")], "broken.yaml", USAGE),
        (["webhook", *tls, "--profiles", str(tmp / "missing.yaml")], "missing.yaml", USAGE),
        (["webhook", *tls, "--namespaces-file", str(tmp / "latin1.yaml")], "latin1.yaml", USAGE),
        (["webhook", "--tls-cert-file", str(tmp / "gone.crt"), *tls[2:]], "gone.crt", USAGE),
        (["webhook", "--self-provision"], "--own-namespace", USAGE),
        (["webhook", *tls, "--port", "https"], "invalid int value", USAGE),
        ([*certs, "--out", "/proc/x/y"], "cannot write", USAGE),
        ([*certs, "--out", str(tmp), "--days", "0"], "--days must be between", USAGE),
        ([*certs, "--out", str(tmp)], "refusing to overwrite", USAGE),
        (["agent", "inspect", "--topo-file", str(tmp / "binary")], "not text", USAGE),
        (["agent", "inspect", "--sysfs-root", str(tmp / "nonexistent")], "not a directory", USAGE),
        (["agent", "run", "--kubeconfig", str(tmp / "missing")], "no such file", USAGE),
        (["agent", "run", "--kubeconfig", str(tmp / "tls.crt")], "is not a kubeconfig", USAGE),
        (["agent", "run", "--sysfs-root", str(tmp / "nonexistent")], "not a directory", USAGE),
        (
            ["agent", "read-vpd", "--sysfs-root", str(tmp / "nonexistent"), "--out", "x"],
            "not a directory",
            USAGE,
        ),
        (["nccl-conf", "--set", "FOO"], "is not NCCL_NAME=VALUE", USAGE),
        (["extender", "--in-cluster"], "--kubeconfig", USAGE),
        (["extender", "--kubeconfig", str(tmp / "missing")], "no such file", USAGE),
        (["extender", "--kubeconfig", str(tmp / "not-kubeconfig.yaml")], "Kubernetes", USAGE),
        (
            ["extender", *snapshot, "--port", str(port), "--host", "127.0.0.1"],
            "another process",
            USAGE,
        ),
        (["extender", *snapshot, "--weights", str(tmp / "binary")], "binary", USAGE),
        (["extender", "--cluster-snapshot", str(tmp / "broken.yaml")], "broken.yaml", USAGE),
        (["extender", *snapshot, "--tls-cert-file", str(tmp / "tls.crt")], "together", USAGE),
        (
            ["extender", *snapshot, "--percentage-of-nodes-to-score", "150"],
            "'150' is not a percentage from 0 to 100",
            USAGE,
        ),
        (["explain", "a/b/c"], "NAMESPACE/POD", USAGE),
        (["simulate", "--cluster", str(tmp / "gone.json"), "--generate", "jobs=5"], "gone", USAGE),
        (["snapshot", "--kubeconfig", str(tmp / "missing"), "--out", str(tmp / "s")], "no", USAGE),
        ([*render, "--profiles", str(tmp / "gone.yaml")], "gone.yaml", USAGE),
        (["acceptance", "verdict", "--log", str(tmp / "missing.log")], "missing.log", USAGE),
        (["acceptance", "run", "--nodes", "a", "--profile", "x", "--soak", "5x"], "5x", USAGE),
        (["diagnose", "--nccl-log", str(tmp / "missing.log")], "missing.log: no such file", USAGE),
        (["diagnose", "team-a/x", "--kubeconfig", str(tmp / "missing")], "no such file", USAGE),
        (["validate", "profiles", str(tmp / "gone.yaml")], "gone.yaml", USAGE),
        (["validate", "weights", str(tmp / "broken.yaml")], "broken.yaml", USAGE),
        (["explain", "team-a/x", "--url", f"http://127.0.0.1:{port}0"], "cannot reach", FAILURE),
        (
            ["nccl-conf", "--sysfs-root", str(tmp / "nonexistent"), "--out", str(tmp / "n")],
            "GID",
            FAILURE,
        ),
    ]


def test_every_subcommand_has_a_bad_input_case(tmp_path: Path, held_port: int) -> None:
    covered = {
        tuple(argv[: len(leaf)])
        for argv, _, status in cases(tmp_path, held_port)
        if status == USAGE
        for leaf in subcommands()
    }
    assert [leaf for leaf in subcommands() if leaf not in covered] == []


def test_bad_input_is_one_line_and_exit_2_failures_exit_1(tmp_path: Path, held_port: int) -> None:
    failures = []
    for argv, words, status in cases(tmp_path, held_port):
        done = kube_rdma(*argv)
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()  # validate: stdout
        last = said[-1] if said else ""
        if (
            done.returncode != status
            or "Traceback" in done.stderr + done.stdout
            or words not in last
            or (status == USAGE and len(done.stderr.strip().splitlines()) > 1)
        ):
            failures.append(f"{argv}: exit {done.returncode}, said {said!r}")
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


def help_entries(*argv: str) -> dict[str, str]:
    """Each option of `kube-rdma ARGV --help`, with its help on one line."""
    usage = kube_rdma(*argv, "--help").stdout
    usage = usage[usage.index("options:") :]
    return {e.split()[0]: " ".join(e.split()) for e in re.split(r"\n  (?=-)", usage)[1:]}


def test_help_shows_every_default() -> None:
    entries = help_entries("extender")
    for option, default in [
        ("--port", "8888"),
        ("--host", "127.0.0.1"),
        ("--plan-timeout", "120.0"),
        ("--percentage-of-nodes-to-score", "100"),
    ]:
        assert f"(default: {default})" in entries[option], entries[option]


@pytest.mark.parametrize("argv", subcommands(), ids=" ".join)
def test_every_subcommands_help_lists_its_defaults(argv: tuple[str, ...]) -> None:
    parser = cli.build_parser()
    for name in argv:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    with_default = [
        a.option_strings[-1]
        for a in parser._actions
        if a.option_strings
        and a.nargs != 0
        and a.default not in (None, False, [], argparse.SUPPRESS)
    ]
    entries = help_entries(*argv)
    assert [o for o in with_default if "(default: " not in entries[o]] == []
    assert "(default: info)" in entries["--log-level"]
    assert [e for e in entries.values() if "as above" in e] == []


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
