"""How every kube-rdma process reaches the apiserver.

A client command (`explain`, `snapshot`, `diagnose`, `acceptance run`) finds its configuration
by kubectl's loading rules: `--kubeconfig FILE`; else the files that $KUBECONFIG lists (a path
list: those that exist are merged as kubectl merges them, the first file to name a cluster,
context or user, or to set current-context, winning); else ~/.kube/config when it exists; else
the pod's ServiceAccount (in-cluster), last. `--context` picks a context (default: the current
one), `-n/--namespace` the namespace (default: the context's, else `default`; in-cluster: the
ServiceAccount's). `add_cluster_flags` adds the three flags; `load_config` returns what it used.

A server (webhook, extender, agent: `load_config(path, server=True)`) uses the file it is given,
else the ServiceAccount: never a developer's $KUBECONFIG or ~/.kube/config by accident.
"""

from __future__ import annotations

import argparse
import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
NOT_A_KUBECONFIG = "is not a kubeconfig (expected a mapping with clusters, contexts and users)"


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used as asked; the message says which and what to do."""


@dataclass(frozen=True)
class Loaded:
    """What `load_config` used: `str()` of it is the one-line description."""

    description: str
    """"kubeconfig /root/.kube/config, context kind-gpu", "in-cluster ServiceAccount"."""
    namespace: str
    """The namespace a command defaults to: the context's, the ServiceAccount's, or default."""
    context: str | None = None

    def __str__(self) -> str:
        return self.description


def add_cluster_flags(parser: argparse.ArgumentParser, *, namespace: bool = True) -> None:
    """`--kubeconfig`, `--context` and (unless the command has its own) `-n/--namespace`."""
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig file (default: as kubectl: $KUBECONFIG, else ~/.kube/config, else "
        "the pod's ServiceAccount)",
    )
    parser.add_argument("--context", help="the kubeconfig context to use (default: the current)")
    if namespace:
        parser.add_argument(
            "-n", "--namespace", help="namespace (default: the context's, else default)"
        )


async def load_config(
    kubeconfig: Path | None, context: str | None = None, *, server: bool = False
) -> Loaded:
    """Configure kubernetes-asyncio's default client by kubectl's rules (the module's
    docstring), or, for a `server`, from `kubeconfig` else in-cluster; what was used."""
    from kubernetes_asyncio import config  # imported when used: the CLI starts fast

    paths, description = _locate(kubeconfig, server)
    if not paths:
        return _in_cluster(context, description)
    documents = _read(paths)
    name, namespace = _context(documents, context)
    try:
        await config.load_kube_config(config_file=os.pathsep.join(map(str, paths)), context=name)
    except (TypeError, AttributeError) as e:
        # kubernetes-asyncio indexes the parsed YAML without checking the types it expects.
        raise config.ConfigException(f"{_where(paths)} {NOT_A_KUBECONFIG}") from e
    return Loaded(f"{description}, context {name}", namespace, name)


def _locate(kubeconfig: Path | None, server: bool) -> tuple[list[Path], str | None]:
    """The kubeconfig files to merge and how to name them; or none, and why none (None for a
    server, which goes in-cluster without looking)."""
    if kubeconfig is not None:
        # One stat, before kubernetes-asyncio's vaguer error.
        if not os.path.isfile(kubeconfig):
            raise FileNotFoundError(errno.ENOENT, "no such kubeconfig file", str(kubeconfig))
        return [kubeconfig], f"kubeconfig {kubeconfig}"
    if server:
        return [], None
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        paths = [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
        found = [p for p in paths if p.is_file()]
        if not found:
            return [], f"KUBECONFIG={listed} names no file that exists"
        merged = "merged, " if len(found) > 1 else ""
        return found, f"kubeconfig {_where(found)} ({merged}from KUBECONFIG)"
    home = _home_config()
    if home is not None and home.is_file():
        return [home], f"kubeconfig {home}"
    return [], f"KUBECONFIG is not set and there is no {home or '~/.kube/config'}"


def _where(paths: list[Path]) -> str:
    return ", ".join(map(str, paths))


def _home_config() -> Path | None:
    try:
        return Path.home() / ".kube" / "config"
    except RuntimeError:  # no HOME and no password entry
        return None


def _in_cluster(context: str | None, missing: str | None) -> Loaded:
    """The pod's ServiceAccount; `missing` says why no kubeconfig was used (a client)."""
    if context:
        raise KubeconfigError(
            f"--context {context} names a kubeconfig context, but no kubeconfig is used"
            + (f" ({missing})" if missing else "")
            + ": give --kubeconfig FILE"
        )
    from kubernetes_asyncio import config

    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException as e:
        if missing is None:
            raise
        raise config.ConfigException(f"{e} No kubeconfig either: {missing}") from e
    try:
        namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        namespace = "default"
    return Loaded("in-cluster ServiceAccount", namespace)


def _context(documents: dict[Path, dict[str, Any]], context: str | None) -> tuple[str, str]:
    """The context to use (`context`, else the current one) and its namespace."""
    from kubernetes_asyncio import config

    contexts: dict[str, Any] = {}
    for path, document in documents.items():
        entries = document.get("contexts") or []
        if not isinstance(entries, list):
            raise KubeconfigError(f"{path} {NOT_A_KUBECONFIG}: contexts is not a list")
        for entry in entries:
            if isinstance(entry, dict) and entry.get("name"):
                contexts.setdefault(str(entry["name"]), entry.get("context"))
    current = next(
        (str(d["current-context"]) for d in documents.values() if d.get("current-context")), None
    )
    where, known = _where(list(documents)), ", ".join(sorted(contexts))
    if not contexts:
        raise config.ConfigException(f"{where} {NOT_A_KUBECONFIG}: it names no context")
    name = context or current
    if name is None:
        raise KubeconfigError(
            f"{where} sets no current-context: give --context NAME (known: {known}), or run "
            "kubectl config use-context NAME"
        )
    if name not in contexts:
        given = "--context" if context else "its current-context"
        raise KubeconfigError(f"{where} has no context {name!r} ({given}); known: {known}")
    found = contexts[name]
    namespace = found.get("namespace") if isinstance(found, dict) else None
    return name, str(namespace or "default")


def _read(paths: list[Path]) -> dict[Path, dict[str, Any]]:
    from kubernetes_asyncio import config

    documents = {}
    for path in paths:
        with path.open() as file:
            document = yaml.safe_load(file)
        if not isinstance(document, dict):
            raise config.ConfigException(f"{path} {NOT_A_KUBECONFIG}")
        documents[path] = document
    return documents
