"""Where `kube-rdma extender` listens, and who may call it: its serving flags, checked.

The verbs bind pods and evict them. On the loopback, beside kube-scheduler in its pod, only that
pod reaches them (and whoever may port-forward or exec into it). On any other address they are
served only with mutual TLS: a client certificate signed by `--client-ca`. Metrics, `/healthz`
and `/readyz` have a port of their own (`--metrics-port`, plain HTTP), so that reading the
metrics never needs a way to the verbs.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from certs.reload import CertificateReloader
from certs.serving import TLS_VERSIONS, TLSPolicy
from kube_rdma.core.listen import bound_port, listening_socket


def register(extender: argparse.ArgumentParser) -> None:
    """The serving flags of `kube-rdma extender`."""
    extender.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on; the loopback, as beside kube-scheduler in its pod. Another "
        "address needs mutual TLS: --tls-cert-file, --tls-key-file and --client-ca",
    )
    extender.add_argument("--port", type=int, default=8888)
    extender.add_argument(
        "--metrics-port",
        type=int,
        help="port of /metrics, /healthz and /readyz (plain HTTP, on --host), apart from the "
        "verbs (default: --port + 1, 8889; any free port with --port 0)",
    )
    extender.add_argument("--tls-cert-file", type=Path, help="serve HTTPS with this certificate")
    extender.add_argument("--tls-key-file", type=Path)
    extender.add_argument(
        "--client-ca",
        type=Path,
        metavar="FILE",
        help="with --tls-cert-file: only clients with a certificate this CA (PEM) signed may "
        "call (mutual TLS); required on a --host other than the loopback",
    )
    extender.add_argument(
        "--tls-min-version",
        choices=sorted(TLS_VERSIONS),
        default="1.3",
        help="oldest TLS version served (1.2: with ECDHE and AES-GCM or ChaCha20 suites only)",
    )


def problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the serving flags together (bad input), or None."""
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        return "--tls-cert-file and --tls-key-file go together"
    if args.client_ca and not args.tls_cert_file:
        return "--client-ca needs --tls-cert-file and --tls-key-file: it is checked over TLS"
    if not loopback(args.host) and not args.client_ca:
        return (
            f"--host {args.host} is not a loopback address: whoever reaches it could filter, "
            "preempt and bind; serve there only with mutual TLS (--tls-cert-file, "
            "--tls-key-file and --client-ca), or listen on 127.0.0.1 beside kube-scheduler"
        )
    return None


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True)
class Listeners:
    verbs: socket.socket
    metrics: socket.socket
    tls: CertificateReloader | None
    url: str
    metrics_url: str


def listen(args: argparse.Namespace) -> Listeners:
    """The sockets bound and the TLS to serve the verbs with. Raises TLSConfigError and the
    errors of kube_rdma.core.listen."""
    policy = TLSPolicy(args.tls_min_version, args.client_ca)
    tls = (
        CertificateReloader(args.tls_cert_file, args.tls_key_file, policy=policy)
        if args.tls_cert_file
        else None
    )
    verbs = listening_socket(args.host, args.port)
    port = args.metrics_port
    if port is None:
        port = args.port + 1 if args.port else 0
    metrics = listening_socket(args.host, port)
    scheme = "https" if tls else "http"
    return Listeners(
        verbs,
        metrics,
        tls,
        f"{scheme}://{args.host}:{bound_port(verbs)}",
        f"http://{args.host}:{bound_port(metrics)}",
    )
