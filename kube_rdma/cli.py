"""The `kube-rdma` command (also `kubectl-rdma`): one console script, a subcommand per job.

Each part registers its own subcommands; this module only builds the parser from them, sets up
logging and dispatches. Nothing is registered at import time: the parser is built per call.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent import cli as agent_cli
from certs import cli as certs_cli
from extender import cli as extender_cli
from fabric import cli as fabric_cli
from kube_rdma.core import logs
from webhook import cli as webhook_cli

PARTS = (webhook_cli, certs_cli, agent_cli, extender_cli, fabric_cli)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kube-rdma", description="RDMA plumbing and placement for GPU training on Kubernetes"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    subcommands = parser.add_subparsers(dest="command", required=True)
    for part in PARTS:
        part.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(args.log_level)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
