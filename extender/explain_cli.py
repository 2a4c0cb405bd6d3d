"""`kube-rdma explain [NAMESPACE/]POD`: what the extender says of a pod, reached as reach.py
says (through the apiserver by default, or at --extender URL), with the kubeconfig, context and
namespace found as kubectl finds them (kube_rdma/kube/kubeconfig.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from extender.reach import LEASE, PORT
from kube_rdma.kube.kubeconfig import add_cluster_flags


def register_explain(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = subcommands.add_parser(
        "explain",
        help="why is a pod pending, or where is it: every node's verdict and score for it",
        description="Ask the extender about a pod: through the apiserver (a port-forward to the "
        "scheduler pod that holds --lease, as kubectl port-forward does), or at --extender URL.",
    )
    explain.add_argument(
        "pod", metavar="[NAMESPACE/]POD", help="the pod (default namespace: -n, else the context's)"
    )
    add_cluster_flags(explain)
    explain.add_argument(
        "--extender",
        "--url",
        dest="url",
        metavar="URL",
        help="the extender's address, e.g. http://127.0.0.1:8888 after kubectl port-forward "
        "(default: through the apiserver)",
    )
    explain.add_argument(
        "--lease",
        default=LEASE,
        metavar="NAMESPACE/NAME",
        help="the scheduler's leader-election Lease: its holder's pod serves the extender",
    )
    explain.add_argument(
        "--extender-port", type=int, default=PORT, help="the extender's port in that pod"
    )
    explain.add_argument("--cacert", type=Path, help="CA to verify an HTTPS --extender with")
    explain.add_argument("--json", action="store_true", help="print the JSON answer")
    explain.set_defaults(run=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_explain(args))


async def _explain(args: argparse.Namespace) -> int:
    from extender.reach import Unreachable, direct, through_apiserver

    found = await _explained_pod(args)
    if found is None:
        return 2
    pod, used = found
    try:
        if args.url:
            return await _ask(direct(args.url, args.lease, args.extender_port), pod, used, args)
        async with through_apiserver(args.lease, args.extender_port) as route:
            return await _ask(route, pod, used, args)
    except Unreachable as e:
        print(f"kube-rdma explain: {e}", file=sys.stderr)
        return 1


async def _explained_pod(
    args: argparse.Namespace,
) -> tuple[tuple[str, str], object | None] | None:
    """(namespace, name) from NAMESPACE/POD, or -n NAMESPACE POD, or POD in the context's
    namespace, and the kubeconfig loaded (None when --extender needed none). None: said why."""
    from kube_rdma.kube.kubeconfig import load_config

    given, _, name = args.pod.rpartition("/")
    if not name or "/" in given or (given and args.namespace and given != args.namespace):
        print(
            f"kube-rdma explain: give the pod as NAMESPACE/POD or -n NAMESPACE POD, not "
            f"{args.pod!r}" + (f" with -n {args.namespace}" if args.namespace else ""),
            file=sys.stderr,
        )
        return None
    namespace = given or args.namespace
    if args.url and namespace:
        return (namespace, name), None
    try:
        used = await load_config(args.kubeconfig, args.context)
    except Exception as e:
        if not args.url:
            raise
        print(
            f"kube-rdma explain: give the pod as NAMESPACE/POD or -n NAMESPACE POD: no "
            f"kubeconfig to take the namespace from ({e})",
            file=sys.stderr,
        )
        return None
    return (namespace or used.namespace, name), used


async def _ask(
    route: Any, pod: tuple[str, str], used: object | None, args: argparse.Namespace
) -> int:
    import asyncio
    import ssl
    import urllib.error
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode(
        {"namespace": pod[0], "name": pod[1], **({} if args.json else {"format": "table"})}
    )
    context = ssl.create_default_context(cafile=str(args.cacert)) if args.cacert else None
    how = f"{route.how}; {used}" if used is not None else route.how
    print(f"kube-rdma explain: asking {route.via} ({how})", file=sys.stderr)

    def fetch() -> str:
        with urllib.request.urlopen(
            f"{route.url}/explain?{query}", timeout=30, context=context
        ) as response:
            return str(response.read().decode())

    try:
        # In a thread: the port-forward relays on this loop meanwhile.
        sys.stdout.write(await asyncio.to_thread(fetch))
    except urllib.error.HTTPError as e:
        print(f"kube-rdma explain: {_refusal(e, route.via, pod)}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"kube-rdma explain: {route.failure(e)}", file=sys.stderr)
        return 1
    return 0


def _refusal(error: Any, via: str, pod: tuple[str, str]) -> str:
    """The extender's refusal (an HTTPError) as a sentence, not the JSON it came in."""
    import json

    text = error.read().decode(errors="replace").strip()
    try:
        message = str(json.loads(text)["error"])
    except (ValueError, KeyError, TypeError):
        message = text or f"HTTP {error.code}"
    if error.code == 404:
        return (
            f"{message.removesuffix('.')} (asked {via}); check the name: "
            f"kubectl get pod -n {pod[0]} {pod[1]}"
        )
    return f"{via} answered {error.code}: {message}"
