"""`kube-rdma certs ...`: certificates for running the webhook for real."""

from __future__ import annotations

import argparse
from pathlib import Path

from certs.generate import generate_ca, generate_serving, service_dns_names, write_bundle


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    certs = subcommands.add_parser("certs", help="create TLS certificates for the webhook")
    verbs = certs.add_subparsers(dest="verb", required=True)
    generate = verbs.add_parser(
        "generate",
        help="write a CA (ca.crt, ca.key) and a serving certificate (tls.crt, tls.key)",
    )
    generate.add_argument("--service", required=True, help="the webhook's Service name")
    generate.add_argument("--namespace", required=True, help="the Service's namespace")
    generate.add_argument("--out", required=True, type=Path, help="directory to write to")
    generate.add_argument(
        "--localhost",
        action="store_true",
        help="also cover localhost and 127.0.0.1, for running the webhook locally",
    )
    generate.set_defaults(run=run_generate)


def run_generate(args: argparse.Namespace) -> int:
    names = service_dns_names(args.service, args.namespace)
    ips: list[str] = []
    if args.localhost:
        names.append("localhost")
        ips.append("127.0.0.1")
    ca = generate_ca(f"kube-rdma CA for {args.service}.{args.namespace}")
    serving = generate_serving(ca, names, ips)
    for path in write_bundle(args.out, ca, serving):
        print(path)
    return 0
