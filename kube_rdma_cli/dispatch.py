"""The `kube-rdma` command (also `kubectl-rdma`): one console script, a subcommand per job.

Each part registers its own subcommands; this module only builds the parser from them, sets up
logging and dispatches. Nothing is registered at import time: the parser is built per call.

Every parser shows its defaults in its help (set here once, for every subcommand), takes
`--log-level` before or after the subcommand, and refuses abbreviated options. Every subcommand
keeps one exit status convention (`cli_errors`): 0 done, 1 a failure found, 2 input it cannot
use. Whatever a subcommand raises ends as one line on stderr that says what was wrong and what
to do, with the status `cli_errors` gives it, never a traceback, unless `--log-level debug` asks
for it.
"""

from __future__ import annotations

import argparse
import copy
import logging
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any, NoReturn

from agent import cli as agent_cli
from certs import cli as certs_cli
from extender import cli as extender_cli
from fabric import cli as fabric_cli
from kube_rdma.core import logs
from kube_rdma_cli import validate
from kube_rdma_cli.cli_errors import USAGE, explain_error
from kubesim.simulate import cli as simulate_cli
from webhook import cli as webhook_cli

PARTS = (webhook_cli, certs_cli, agent_cli, extender_cli, simulate_cli, fabric_cli, validate)
LOG_LEVELS = ["debug", "info", "warning"]
LOG_LEVEL_HELP = "how much to log; debug also shows the traceback of a failure"
DEFAULT_LOG_LEVEL = "info"


class HelpWithDefaults(argparse.HelpFormatter):
    """Every option that has a default says it, with help text of its own or without."""

    def _format_action(self, action: argparse.Action) -> str:
        shown = action.help or ""
        if action.option_strings and _has_default(action) and "(default" not in shown:
            action = copy.copy(action)
            action.help = f"{shown} (default: %(default)s)".strip()
        return super()._format_action(action)


def _has_default(action: argparse.Action) -> bool:
    return action.nargs != 0 and action.default not in (None, False, argparse.SUPPRESS, [])


class Parser(argparse.ArgumentParser):
    """Defaults shown in help, no prefix abbreviations, `--log-level` on every subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpWithDefaults)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        if self.prog != "kube-rdma":
            # Absent unless given here, so that a level given before the subcommand stands.
            self.add_argument(
                "--log-level",
                choices=LOG_LEVELS,
                default=argparse.SUPPRESS,
                help=f"{LOG_LEVEL_HELP}; also taken before the subcommand "
                f"(default: {DEFAULT_LOG_LEVEL})",
            )

    def error(self, message: str) -> NoReturn:
        """A bad flag or argument: argparse's one line without the usage block above it (`--help`
        shows that), and exit status 2."""
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


def version() -> str:
    """The installed package's version (the image and the manifests carry the same)."""
    try:
        return metadata.version("kube-rdma")
    except metadata.PackageNotFoundError:
        return "unknown (not installed; run from a source tree)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kube-rdma", description="RDMA plumbing and placement for GPU training on Kubernetes"
    )
    parser.add_argument("--version", action="version", version=f"kube-rdma {version()}")
    parser.add_argument(
        "--log-level", default=DEFAULT_LOG_LEVEL, choices=LOG_LEVELS, help=LOG_LEVEL_HELP
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for part in PARTS:
        part.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(args.log_level)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.log_level == "debug":
            logging.getLogger("kube_rdma").exception("%s failed", args.command)
        message, status = explain_error(e)
        print(f"{_name(args)}: {message}", file=sys.stderr)
        return status


def _name(args: argparse.Namespace) -> str:
    """The subcommand as typed: `kube-rdma certs generate`, `kube-rdma webhook`."""
    verb = getattr(args, "verb", None)
    return " ".join(["kube-rdma", args.command, *([verb] if isinstance(verb, str) else [])])
