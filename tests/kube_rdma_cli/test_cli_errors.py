"""The one line `kube-rdma` prints for each kind of failure, and its exit status."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.config import ConfigException

from certs.rotation import ProvisionError
from kube_rdma.core.config_file import ConfigError
from kube_rdma.kube.errors import ApiError
from kube_rdma.kube.kubeconfig import load_config
from kube_rdma_cli.cli_errors import FAILURE, INTERNAL, USAGE, explain_error


def yaml_error() -> yaml.YAMLError:
    try:
        yaml.safe_load("a: [b\n")
    except yaml.YAMLError as e:
        return e
    raise AssertionError("the YAML was valid")


CASES = [
    (
        OSError(
            errno.EADDRINUSE,
            "error while attempting to bind on address ('0.0.0.0', 8443): address already in use",
        ),
        "error while attempting to bind on address ('0.0.0.0', 8443): address already in use "
        "('0.0.0.0', 8443): another process listens there; stop it, or choose another --port or "
        "--host",
        USAGE,
    ),
    (
        FileNotFoundError(errno.ENOENT, "No such file", "/etc/kube-rdma/profiles.yaml"),
        "/etc/kube-rdma/profiles.yaml: no such file or directory; check the path",
        USAGE,
    ),
    (
        IsADirectoryError(errno.EISDIR, "Is a directory", "/etc"),
        "/etc: is a directory, expected a file",
        USAGE,
    ),
    (
        PermissionError(errno.EACCES, "Permission denied", "/root/key"),
        "/root/key: permission denied; check the file's owner and mode",
        USAGE,
    ),
    (
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        "a file is not UTF-8 text (invalid start byte at byte 0)",
        USAGE,
    ),
    (
        yaml_error(),
        'not valid YAML: while parsing a flow sequence in "<unicode string>", line 1, column 4: '
        "a: [b ^ expected ',' or ']', but got '<stream end>' in \"<unicode string>\", line 2, "
        "column 1: ^",
        USAGE,
    ),
    (
        ConfigException("Invalid kube-config file.\nNo configuration found."),
        "no usable Kubernetes configuration (Invalid kube-config file. No configuration found.); "
        "outside a cluster pass --kubeconfig FILE, inside one check the pod's ServiceAccount "
        "token",
        USAGE,
    ),
    (
        ApiError("read Node gpu-1", 403, "Forbidden", "nodes is forbidden"),
        "the apiserver refused: read Node gpu-1: Forbidden: nodes is forbidden",
        USAGE,
    ),
    (ConfigError("weights.rate: must be >= 0"), "weights.rate: must be >= 0", USAGE),
    (ProvisionError("the Secret has no\n  ca.key"), "the Secret has no ca.key", USAGE),
    (OSError(errno.EIO, "Input/output error"), "[Errno 5] Input/output error", FAILURE),
    (
        ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
        "[Errno 111] Connection refused",
        FAILURE,
    ),
    (
        OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"),
        "[Errno 99] Cannot assign requested address",
        USAGE,
    ),
    (
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        "[Errno -2] Name or service not known: check the host name",
        USAGE,
    ),
    (
        KeyError("spec"),
        "internal error (KeyError: 'spec'); rerun with --log-level debug for the traceback, and "
        "report it",
        INTERNAL,
    ),
]


@pytest.mark.parametrize(
    ("error", "line", "status"), CASES, ids=[type(c[0]).__name__ for c in CASES]
)
def test_each_failure_gets_one_line_and_a_status(
    error: BaseException, line: str, status: int
) -> None:
    assert explain_error(error) == (line, status)


async def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        await load_config(tmp_path / "absent")
    assert explain_error(raised.value) == (
        f"{tmp_path / 'absent'}: no such file or directory; check the path",
        USAGE,
    )


async def test_a_kubeconfig_that_is_no_mapping_is_said_so(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigException) as raised:
        await load_config(path)
    assert str(raised.value) == (
        f"{path} is not a kubeconfig (expected a mapping with clusters, contexts and users)"
    )


async def test_without_a_kubeconfig_outside_a_cluster_the_error_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigException) as raised:
        await load_config(None, server=True)
    assert explain_error(raised.value)[0].startswith(
        "no usable Kubernetes configuration (Service host/port is not set.)"
    )
