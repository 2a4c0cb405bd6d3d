"""`kube-rdma certs ...`: certificates for running the webhook for real.

`certs generate` refuses to replace files it finds in `--out` unless given `--force`: a new CA
means a new `caBundle` in the webhook configuration, and a CA silently regenerated (by a script
rerun on every upgrade, say) breaks every call the apiserver makes until someone notices.
Every flag is checked, and the directory too, before anything is generated or written.

Exit status as every `kube-rdma` subcommand: 2 for a flag or `--out` it cannot use (one line,
said by `kube_rdma_cli`), 1 when writing fails for another reason (a disk full), 0 done.
"""

from __future__ import annotations

import argparse
import datetime as dt
import errno
import sys
from dataclasses import dataclass
from pathlib import Path

from certs.generate import (
    CA_LIFETIME,
    SERVING_LIFETIME,
    KeyType,
    existing_bundle_files,
    generate_ca,
    generate_serving,
    service_dns_names,
    split_names,
    write_bundle,
)

PROG = "kube-rdma certs generate"
# X.509 dates end in 9999; a century is more than any certificate here should live.
MAX_DAYS = 36500


# Writing failed because of the --out given, not because something broke while writing.
_BAD_OUT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS})


class UsageError(ValueError):
    """A flag value `certs generate` cannot use: exit 2 with the message (`kube_rdma_cli`)."""


@dataclass(frozen=True)
class Plan:
    """What `certs generate` makes, once its flags have been checked."""

    dns_names: list[str]
    ip_addresses: list[str]
    key_type: KeyType
    ca_lifetime: dt.timedelta
    serving_lifetime: dt.timedelta


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    certs = subcommands.add_parser("certs", help="create TLS certificates for the webhook")
    verbs = certs.add_subparsers(dest="verb", required=True)
    generate = verbs.add_parser(
        "generate",
        help="write a CA (ca.crt, ca.key) and a serving certificate (tls.crt, tls.key)",
    )
    generate.add_argument("--service", required=True, help="the webhook's Service name")
    generate.add_argument("--namespace", required=True, help="the Service's namespace")
    generate.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="directory to write to"
    )
    generate.add_argument(
        "--localhost",
        action="store_true",
        help="also cover localhost and 127.0.0.1, for running the webhook locally",
    )
    generate.add_argument(
        "--san",
        action="append",
        metavar="NAME",
        help="one more DNS name or IP address for the serving certificate (repeatable)",
    )
    generate.add_argument(
        "--key-type",
        choices=[k.value for k in KeyType],
        default=KeyType.ECDSA_P256.value,
        help="private key of both certificates (default: %(default)s)",
    )
    generate.add_argument(
        "--ca-days",
        type=int,
        metavar="N",
        default=CA_LIFETIME.days,
        help="CA lifetime in days (default: %(default)s)",
    )
    generate.add_argument(
        "--days",
        type=int,
        metavar="N",
        default=SERVING_LIFETIME.days,
        help="serving certificate lifetime in days, at most --ca-days (default: %(default)s)",
    )
    generate.add_argument(
        "--force", action="store_true", help="replace certificate files that exist in --out"
    )
    generate.set_defaults(run=run_generate)


def run_generate(args: argparse.Namespace) -> int:
    plan = plan_generate(args)
    check_out_dir(args.out, force=args.force)
    now = dt.datetime.now(dt.UTC)
    ca = generate_ca(
        f"kube-rdma CA for {args.service}.{args.namespace}",
        now,
        key_type=plan.key_type,
        lifetime=plan.ca_lifetime,
    )
    serving = generate_serving(
        ca,
        plan.dns_names,
        plan.ip_addresses,
        now,
        key_type=plan.key_type,
        lifetime=plan.serving_lifetime,
    )
    try:
        written = write_bundle(args.out, ca, serving)
    except OSError as e:
        if e.errno in _BAD_OUT:
            raise UsageError(f"cannot write to {args.out}: {e.strerror or e}") from None
        print(f"{PROG}: cannot write to {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def plan_generate(args: argparse.Namespace) -> Plan:
    """The certificates the flags ask for; UsageError says what is wrong with them."""
    for flag, days in (("--ca-days", args.ca_days), ("--days", args.days)):
        if not 1 <= days <= MAX_DAYS:
            raise UsageError(f"{flag} must be between 1 and {MAX_DAYS}, got {days}")
    if args.days > args.ca_days:
        raise UsageError(
            f"--days {args.days} is longer than --ca-days {args.ca_days}: "
            "the serving certificate cannot outlive its CA"
        )
    dns_names = service_dns_names(args.service, args.namespace)
    ip_addresses: list[str] = []
    if args.localhost:
        dns_names.append("localhost")
        ip_addresses.append("127.0.0.1")
    try:
        extra_dns, extra_ips = split_names(args.san or [])
    except ValueError as e:
        raise UsageError(f"--san {e}") from None
    return Plan(
        dns_names=_unique(dns_names + extra_dns),
        ip_addresses=_unique(ip_addresses + extra_ips),
        key_type=KeyType(args.key_type),
        ca_lifetime=dt.timedelta(days=args.ca_days),
        serving_lifetime=dt.timedelta(days=args.days),
    )


def check_out_dir(out: Path, *, force: bool) -> None:
    """Raise UsageError if writing the bundle to `out` is not possible or not allowed."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is not a directory")
    existing = existing_bundle_files(out)
    if existing and not force:
        raise UsageError(
            f"refusing to overwrite {', '.join(map(str, existing))}; pass --force to replace "
            "them (the new ca.crt must then go into the webhook's caBundle)"
        )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
