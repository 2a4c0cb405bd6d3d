"""`kube-rdma webhook`: serve the mutating admission webhook.

Flags, files and certificates that cannot be used end the command before it listens, raised to
`kube_rdma_cli` like every subcommand's: one line and exit status 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("kube_rdma.webhook")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `webhook` to the `kube-rdma` command."""
    webhook = subcommands.add_parser("webhook", help="serve the mutating admission webhook")
    webhook.add_argument("--tls-cert-file", type=Path, help="serving certificate (PEM)")
    webhook.add_argument("--tls-key-file", type=Path, help="its private key (PEM)")
    webhook.add_argument(
        "--tls-min-version",
        choices=["1.2", "1.3"],
        default="1.3",
        help="oldest TLS version served (1.2: with ECDHE and AES-GCM or ChaCha20 suites only; "
        "the apiserver speaks 1.3)",
    )
    webhook.add_argument(
        "--self-provision",
        action="store_true",
        help="keep a CA and serving certificate in a Secret and the CA in the webhook "
        "configuration's caBundle, renewing and rotating them (needs --own-namespace)",
    )
    webhook.add_argument(
        "--tls-secret",
        default="kube-rdma-webhook-tls",
        help="with --self-provision: the Secret that keeps the CA and serving certificate",
    )
    webhook.add_argument(
        "--webhook-configuration",
        default="kube-rdma",
        help="with --self-provision: the MutatingWebhookConfiguration whose caBundle is kept",
    )
    webhook.add_argument("--profiles", type=Path, help="RDMA profiles YAML (default: built-in)")
    webhook.add_argument("--port", type=int, default=8443, help="HTTPS port (0: any free one)")
    webhook.add_argument("--host", default="0.0.0.0", help="address to listen on")
    where = webhook.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", type=Path, help="watch Namespaces with this kubeconfig")
    where.add_argument(
        "--in-cluster", action="store_true", help="watch Namespaces with the pod's ServiceAccount"
    )
    where.add_argument(
        "--namespaces-file",
        type=Path,
        help="without a cluster: Namespace objects (YAML/JSON) standing in for the live ones",
    )
    webhook.add_argument(
        "--dra-file",
        type=Path,
        help="without a cluster: ResourceClaimTemplates, ResourceClaims and DeviceClasses "
        "(YAML/JSON) standing in for the live ones (with a cluster they are read from it)",
    )
    webhook.add_argument(
        "--own-namespace",
        default=os.environ.get("POD_NAMESPACE"),
        help="the webhook's namespace, never mutated (default: $POD_NAMESPACE)",
    )
    webhook.add_argument(
        "--max-body-bytes",
        type=int,
        default=6 << 20,
        help="larger AdmissionReview requests are refused",
    )
    webhook.add_argument(
        "--service-name",
        default="kube-rdma-webhook",
        help="the webhook's Service: with --own-namespace, a new certificate must cover "
        "SERVICE.NAMESPACE.svc to be taken",
    )
    webhook.add_argument(
        "--default-pod-security",
        choices=["privileged", "baseline", "restricted"],
        default="privileged",
        help="Pod Security level of namespaces without an enforce label (the cluster default)",
    )
    webhook.set_defaults(run=run_webhook)


def run_webhook(args: argparse.Namespace) -> int:
    from aiohttp import web

    from certs.provision import ProvisionSettings
    from certs.reload import CertificateReloader
    from certs.serving import TLSPolicy
    from kube_rdma.core.listen import bound_port, listening_socket
    from webhook.app import SHUTDOWN_TIMEOUT_SECONDS, Settings, create_app
    from webhook.podsecurity import Level
    from webhook.tls import placeholder_reloader, self_provisioned_app

    settings = Settings(
        profiles_file=args.profiles,
        namespaces_file=args.namespaces_file,
        dra_file=args.dra_file,
        kubeconfig=args.kubeconfig,
        in_cluster=args.in_cluster,
        own_namespace=args.own_namespace,
        max_body_bytes=args.max_body_bytes,
        default_pod_security=Level(args.default_pod_security),
    )
    required = [f"{args.service_name}.{args.own_namespace}.svc"] if args.own_namespace else []
    problem = _tls_problem(args)
    if problem:
        raise ValueError(problem)
    # A certificate, profiles, namespaces or DRA file, a kubeconfig or a provisioned Secret that
    # cannot be used raises before "listening" is logged (TLSConfigError, ConfigError,
    # ProvisionError...): kube_rdma_cli says it in one line, exit status 2.
    if args.self_provision:
        tls = placeholder_reloader(required, TLSPolicy(args.tls_min_version))
        provision = ProvisionSettings(
            namespace=args.own_namespace,
            service=args.service_name,
            secret_name=args.tls_secret,
            webhook_configuration=args.webhook_configuration,
            # The Secret is checked as often as certificate files are: within 10 s.
            check_interval=dt.timedelta(seconds=10),
        )
        app: Any = self_provisioned_app(settings, tls, provision, args.kubeconfig)
    else:
        tls = CertificateReloader(
            args.tls_cert_file,
            args.tls_key_file,
            required,
            policy=TLSPolicy(args.tls_min_version),
        )
        app = create_app(settings, tls=tls)
    sock = listening_socket(args.host, args.port)
    port = bound_port(sock)
    web.run_app(
        app,
        sock=sock,
        ssl_context=tls.context,
        # aiohttp prints once the app started (profiles, namespaces, kubeconfig and
        # certificate read): only then is "listening" true, on the port bound (--port 0:
        # any free one).
        print=lambda _: log.info("webhook listening on https://%s:%d", args.host, port),
        access_log=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS,
    )
    log.info("webhook stopped")
    return 0


def _tls_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the TLS flags, if anything."""
    files = args.tls_cert_file is not None, args.tls_key_file is not None
    if args.self_provision:
        if any(files):
            return (
                "--self-provision provisions the certificate; drop --tls-cert-file/--tls-key-file"
            )
        if not args.own_namespace:
            return (
                "--self-provision needs the webhook's namespace: --own-namespace or $POD_NAMESPACE"
            )
        return None
    if not all(files):
        return "give --tls-cert-file and --tls-key-file, or --self-provision"
    return None
