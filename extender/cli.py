"""`kube-rdma agent ...`: the node agent's commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("kube_rdma.agent")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_agent(subcommands)
    _register_extender(subcommands)
    _register_explain(subcommands)


def _register_extender(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    extender = subcommands.add_parser("extender", help="serve the kube-scheduler extender")
    extender.add_argument("--host", default="0.0.0.0")
    extender.add_argument("--port", type=int, default=8888)
    extender.add_argument("--tls-cert-file", type=Path, help="serve HTTPS with this certificate")
    extender.add_argument("--tls-key-file", type=Path)
    extender.add_argument("--weights", type=Path, help="score weights YAML (default: built-in)")
    extender.add_argument(
        "--gpu-resource", action="append", help="GPU resource name (repeatable; nvidia.com/gpu)"
    )
    extender.add_argument(
        "--rdma-resource",
        action="append",
        help="pattern of RDMA resource names (repeatable; default rdma/*)",
    )
    extender.add_argument(
        "--domain-label",
        action="append",
        help="node label of a network domain for gang placement, narrowest first (repeatable; "
        "default: network.kube-rdma.io/leaf, network.kube-rdma.io/spine, "
        "topology.kubernetes.io/zone)",
    )
    extender.add_argument(
        "--plan-timeout",
        type=float,
        default=120.0,
        help="seconds a gang plan lives without progress",
    )
    extender.add_argument(
        "--barrier-timeout",
        type=float,
        default=4.0,
        help="seconds a gang member's bind waits for the others (keep below httpTimeout)",
    )
    where = extender.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster-snapshot", type=Path, help="a JSON/YAML file of Nodes and Pods")
    where.add_argument("--kubeconfig", type=Path)
    where.add_argument("--in-cluster", action="store_true")
    extender.set_defaults(run=run_extender)


def _register_explain(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = subcommands.add_parser(
        "explain", help="why is a pod pending: every node's verdict and score for it"
    )
    explain.add_argument("pod", help="NAMESPACE/NAME")
    explain.add_argument("--url", default="http://127.0.0.1:8888", help="the extender's address")
    explain.add_argument("--cacert", type=Path, help="CA to verify an HTTPS extender with")
    explain.add_argument("--json", action="store_true", help="print the JSON answer")
    explain.set_defaults(run=run_explain)


def _register_agent(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    agent = subcommands.add_parser("agent", help="discover and publish this node's RDMA topology")
    verbs = agent.add_subparsers(dest="verb", required=True)

    def sources(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
        parser.add_argument(
            "--topo-file",
            type=Path,
            help="`nvidia-smi topo -m` output to take GPUs and GPU-NIC levels from",
        )

    inspect = verbs.add_parser("inspect", help="print this node's topology document and exit")
    sources(inspect)
    inspect.set_defaults(run=run_inspect)

    run = verbs.add_parser("run", help="publish the topology on the Node, re-scanning")
    sources(run)
    run.add_argument("--node-name", default=os.environ.get("NODE_NAME"))
    run.add_argument("--interval", type=float, default=30.0, help="seconds between scans")
    run.add_argument(
        "--recover-after",
        type=int,
        default=3,
        help="clean scans before an unhealthy port counts as healthy again",
    )
    where = run.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", type=Path)
    where.add_argument("--in-cluster", action="store_true")
    run.set_defaults(run=run_agent)


def run_inspect(args: argparse.Namespace) -> int:
    from extender.agent import ScanError
    from extender.discovery import discover
    from extender.topology import encode

    try:
        document = encode(discover(args.sysfs_root, args.topo_file))
    except (*ScanError, OSError) as e:
        print(f"kube-rdma agent inspect: {e}", file=sys.stderr)
        return 2
    print(document)
    return 0


def run_agent(args: argparse.Namespace) -> int:
    if not args.node_name:
        log.error(
            "no node name: pass --node-name or set NODE_NAME (the downward API's spec.nodeName)"
        )
        return 2
    if args.interval <= 0 or args.recover_after < 1:
        log.error("--interval must be positive and --recover-after at least 1")
        return 2
    return asyncio.run(_until_signalled(args))


async def _until_signalled(args: argparse.Namespace) -> int:
    """Run the agent until SIGTERM or SIGINT (as PID 1 in a container nothing else stops it
    short of SIGKILL)."""
    task = asyncio.create_task(_serve(args))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        log.info("agent stopped", extra={"node": args.node_name})
        return 0


async def _serve(args: argparse.Namespace) -> int:
    from kubernetes_asyncio import client

    from extender.agent import Agent, AgentSettings
    from extender.kubeconfig import load_config

    await load_config(args.kubeconfig)
    settings = AgentSettings(
        node_name=args.node_name,
        sysfs_root=args.sysfs_root,
        topo_file=args.topo_file,
        interval=args.interval,
        recover_after=args.recover_after,
    )
    async with client.ApiClient() as api:
        log.info("agent started", extra={"node": args.node_name})
        await Agent(client.CoreV1Api(api), settings).run()
    return 0


def run_extender(args: argparse.Namespace) -> int:
    from aiohttp import web

    from certs.reload import CertificateReloader
    from certs.serving import TLSConfigError
    from extender.snapshot import SnapshotError
    from extender.watched import ConfigError

    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        log.error("--tls-cert-file and --tls-key-file go together")
        return 2
    try:
        tls = (
            CertificateReloader(args.tls_cert_file, args.tls_key_file)
            if args.tls_cert_file
            else None
        )
        ssl_context = tls.context if tls else None
        scheme = "https" if ssl_context else "http"
        log.info("extender listening on %s://%s:%d", scheme, args.host, args.port)
        web.run_app(
            _extender_app(args, tls),
            host=args.host,
            port=args.port,
            ssl_context=ssl_context,
            print=None,
            access_log=None,
        )
    except (TLSConfigError, ConfigError, SnapshotError) as e:
        log.error("cannot start the extender: %s", e)
        return 1
    return 0


async def _extender_app(args: argparse.Namespace, tls: Any = None) -> Any:
    """The app around its cluster source; the live source's API client needs the running loop."""
    from dataclasses import replace

    from kubernetes_asyncio import client

    from extender.app import Settings, create_app
    from extender.kubeconfig import load_config
    from extender.live import LiveSource
    from extender.planner import GangSettings
    from extender.snapshot import SnapshotSource

    gangs = GangSettings(plan_timeout=args.plan_timeout, barrier_timeout=args.barrier_timeout)
    if args.domain_label:
        gangs = replace(gangs, domains=tuple(args.domain_label))
    settings = Settings(
        weights_file=args.weights,
        gpu_resources=tuple(args.gpu_resource or ("nvidia.com/gpu",)),
        rdma_resources=tuple(args.rdma_resource or ("rdma/*",)),
        gangs=gangs,
    )
    if args.cluster_snapshot:
        return create_app(settings, SnapshotSource.from_file(args.cluster_snapshot), tls)
    await load_config(args.kubeconfig)
    api = client.ApiClient()
    source = LiveSource(client.CoreV1Api(api), custom_api=client.CustomObjectsApi(api))
    app = create_app(settings, source, tls)

    async def close(_: Any) -> None:
        await api.close()

    app.on_cleanup.append(close)
    return app


def run_explain(args: argparse.Namespace) -> int:
    import ssl
    import urllib.error
    import urllib.parse
    import urllib.request

    namespace, _, name = args.pod.partition("/")
    if not namespace or not name:
        print("kube-rdma explain: give the pod as NAMESPACE/NAME", file=sys.stderr)
        return 2
    query = urllib.parse.urlencode(
        {"namespace": namespace, "name": name, **({} if args.json else {"format": "table"})}
    )
    context = ssl.create_default_context(cafile=str(args.cacert)) if args.cacert else None
    try:
        with urllib.request.urlopen(
            f"{args.url.rstrip('/')}/explain?{query}", timeout=30, context=context
        ) as response:
            sys.stdout.write(response.read().decode())
    except urllib.error.HTTPError as e:
        print(f"kube-rdma explain: {e.read().decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"kube-rdma explain: cannot reach the extender at {args.url}: {e}", file=sys.stderr)
        return 1
    return 0
