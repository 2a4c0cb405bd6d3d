"""`kube-rdma validate profiles|weights FILE...`: check an admin's config file before it ships.

A bad profiles or weights file is refused by the service at start-up, or kept out on reload
while the last good one stays in force: either way the admin learns of it from a log. This
command reads the file offline with the very parsers the services use (the webhook's profile
loader, the extender's weights parser), so that a CI job or a pre-commit hook catches it first.
It sits above the parts because it needs two of them.

A file is either the plain file the service reads, or the ConfigMap that carries it (as
manifests/ ships them): then the key the service's Deployment mounts is read, `profiles.yaml`
for the webhook (/config/profiles.yaml), `weights.yaml` for the extender (/config/weights.yaml).

Each file gets one line when it is good (`FILE: ok (2 profiles: default, rdma-ib)`), and one
line per problem otherwise (`FILE: profiles.rdma-ib.gid.strategy: Input should be ...`); a
profile that loads but works only on some hardware adds a warning line. Exit 0 when every file
is good, 2 otherwise.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from extender.weights import parse_weights
from kube_rdma.core.config_file import ConfigError, read_text
from webhook.profiles import parse_profiles

USAGE = 2
"""Exit status when some file cannot be used, as for any input the command cannot use."""


@dataclass(frozen=True)
class Report:
    """What to print about one file, and whether the service would take it."""

    ok: bool
    lines: tuple[str, ...]


Check = Callable[[str, str], Report]
"""A file's text and name -> its report."""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `validate` and its verbs to the `kube-rdma` command."""
    validate = subcommands.add_parser(
        "validate", help="check profiles or weights files offline, as the services would"
    )
    kinds = validate.add_subparsers(dest="kind", required=True)
    for kind, check, what in (
        ("profiles", check_profiles, "RDMA profiles files (the webhook's --profiles)"),
        ("weights", check_weights, "score weights files (the extender's --weights)"),
    ):
        parser = kinds.add_parser(
            kind, help=f"check {what}, plain or as their ConfigMap (data.{KEYS[kind]})"
        )
        parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
        parser.set_defaults(run=_runner(check, KEYS[kind]))


KEYS = {"profiles": "profiles.yaml", "weights": "weights.yaml"}
"""The ConfigMap key each service's Deployment mounts under /config (manifests/webhook,
manifests/scheduler)."""


def _runner(check: Check, key: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        reports = [check_file(path, check, key) for path in args.files]
        print("\n".join(line for report in reports for line in report.lines))
        return 0 if all(report.ok for report in reports) else USAGE

    return run


def check_file(path: Path, check: Check, key: str | None = None) -> Report:
    """One file, read as the services read it (out of its ConfigMap's `key`), then checked."""
    try:
        text = read_text(path)
    except ConfigError as e:
        return Report(False, (str(e),))
    unwrapped = configmap_entry(text, str(path), key) if key else (text, str(path))
    if isinstance(unwrapped, Report):
        return unwrapped
    return check(*unwrapped)


def configmap_entry(text: str, source: str, key: str) -> tuple[str, str] | Report:
    """The text under `data.<key>` and a name for it when `text` is a ConfigMap; the text
    itself otherwise (the check then says what is wrong with it)."""
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return text, source
    if not isinstance(data, dict) or data.get("kind") != "ConfigMap":
        return text, source
    name = (data.get("metadata") or {}).get("name") or "without a name"
    entries = data.get("data") or {}
    entry = entries.get(key) if isinstance(entries, dict) else None
    if not isinstance(entry, str):
        keys = ", ".join(sorted(map(str, entries))) if isinstance(entries, dict) else ""
        return Report(
            False,
            (
                f"{source}: ConfigMap {name} has no data.{key} (its keys: {keys or 'none'}); "
                f"the service reads /config/{key}, its ConfigMap's data.{key}: put the file "
                "there",
            ),
        )
    return entry, f"{source} (ConfigMap {name}, data.{key})"


def check_profiles(text: str, source: str) -> Report:
    try:
        profiles = parse_profiles(text, source)
    except ConfigError as e:
        return Report(False, problems(e, source))
    names = sorted(profiles.profiles)
    count = f"{len(names)} profile{'s' if len(names) != 1 else ''}"
    ok = f"{source}: ok ({count}: {', '.join(names)})"
    warnings = (
        f"{source}: profiles.{name}: warning: {message}"
        for name, messages in profiles.load_warnings().items()
        for message in messages
    )
    return Report(True, (ok, *warnings))


def check_weights(text: str, source: str) -> Report:
    try:
        weights = parse_weights(text, source)
    except ConfigError as e:
        return Report(False, problems(e, source))
    shown = ", ".join(f"{name} {value:g}" for name, value in weights.as_dict().items())
    return Report(True, (f"{source}: ok (weights: {shown})",))


def problems(error: ConfigError, source: str) -> tuple[str, ...]:
    """One line per problem: pydantic's own list where the parser refused the schema, else the
    parser's message (not YAML, not a mapping...)."""
    cause = error.__cause__
    if not isinstance(cause, ValidationError):
        return (" ".join(str(error).split()),)
    return tuple(
        f"{source}: {_entry(item['loc'])}{_message(item['msg'])}" for item in cause.errors()
    )


def _entry(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) + ": " if loc else ""


def _message(msg: str) -> str:
    return " ".join(msg.removeprefix("Value error, ").split())
