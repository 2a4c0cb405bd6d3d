"""What the `kube-rdma` command prints when a subcommand fails: one line saying what was wrong
and what to do, and the exit status, instead of a traceback.

Every subcommand keeps one convention, decided here for whatever it raises:

- 0: done, nothing wrong;
- 1 (FAILURE): the input was usable and the command found a failure or met one while running
  (NCCL fell back to TCP, an extender that does not answer, a disk full, an internal error);
- 2 (USAGE): input the command cannot use, as argparse exits for a bad flag: a flag value, a
  file missing, unreadable or invalid (profiles, weights, snapshot, certificate, kubeconfig), a
  port another process holds.

Our own errors already say what was wrong and what to do (a profile, weights or snapshot file
refused, a sysfs tree that cannot be read...); the rest come from the system or the libraries
and get the missing half here: the address in use, the file not there, the kubeconfig not usable.
"""

from __future__ import annotations

import errno
import socket

import yaml
from kubernetes_asyncio.config import ConfigException

from agent.attributes import SysfsError
from agent.discovery import DiscoveryError
from agent.pod_network import ProcError
from certs.rotation import ProvisionError
from certs.serving import TLSConfigError
from extender.cluster.snapshot import SnapshotError
from kube_rdma.core.config_file import ConfigError
from kube_rdma.kube.errors import ApiError

OK = 0
FAILURE = 1
"""Exit status for a failure found or met while running."""
USAGE = 2
"""Exit status for input the command cannot use (argparse's own)."""
INTERNAL = FAILURE

# System errors that say the path, address or permission given was wrong, not that something
# failed while the command ran (a disk full, an I/O error, a connection refused or reset).
_INPUT_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EADDRINUSE,
        errno.EADDRNOTAVAIL,
    }
)

_OURS = (
    ConfigError,
    SnapshotError,
    SysfsError,
    DiscoveryError,
    ProcError,
    ProvisionError,
    TLSConfigError,
    ValueError,
)


def explain_error(error: BaseException) -> tuple[str, int]:
    """The line to print for `error`, and the exit status."""
    if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
        return (
            f"{error.strerror or 'address already in use'} ({_address(error)}): another process "
            "listens there; stop it, or choose another --port or --host",
            USAGE,
        )
    if isinstance(error, FileNotFoundError):
        return f"{error.filename}: no such file or directory; check the path", USAGE
    if isinstance(error, IsADirectoryError):
        return f"{error.filename}: is a directory, expected a file", USAGE
    if isinstance(error, PermissionError):
        return f"{error.filename}: permission denied; check the file's owner and mode", USAGE
    if isinstance(error, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({error.reason} at byte {error.start})", USAGE
    if isinstance(error, yaml.YAMLError):
        return f"not valid YAML: {_one_line(str(error))}", USAGE
    if isinstance(error, ConfigException):
        return (
            f"no usable Kubernetes configuration ({_one_line(str(error))}); outside a cluster "
            "pass --kubeconfig FILE, inside one check the pod's ServiceAccount token",
            USAGE,
        )
    if isinstance(error, ApiError):
        return f"the apiserver refused: {error}", USAGE
    if isinstance(error, _OURS):
        return _one_line(str(error)), USAGE
    if isinstance(error, socket.gaierror):
        return f"{_one_line(str(error))}: check the host name", USAGE
    if isinstance(error, OSError):
        return _one_line(str(error)), USAGE if error.errno in _INPUT_ERRNOS else FAILURE
    return (
        f"internal error ({type(error).__name__}: {_one_line(str(error))}); rerun with "
        "--log-level debug for the traceback, and report it",
        INTERNAL,
    )


def _address(error: OSError) -> str:
    # asyncio words it "error while attempting to bind on address ('0.0.0.0', 8443): ..."
    text = str(error)
    start, end = text.find("("), text.find(")")
    return text[start + 1 : end] if 0 <= start < end else text


def _one_line(text: str) -> str:
    return " ".join(text.split())
