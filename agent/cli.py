"""`kube-rdma agent inspect|run|read-vpd` and `kube-rdma nccl-conf`: the node agent's commands."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.error_rules import ErrorRule
    from kube_rdma.core.topology import Topology

log = logging.getLogger("kube_rdma.agent")
NCCL_NAME = re.compile(r"^NCCL_[A-Z0-9_]+$")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `agent` and its verbs to the `kube-rdma` command."""
    agent = subcommands.add_parser("agent", help="discover and publish this node's RDMA topology")
    verbs = agent.add_subparsers(dest="verb", required=True)

    def sources(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
        parser.add_argument(
            "--proc-root",
            type=Path,
            default=Path("/proc"),
            help="where the NVIDIA driver's version and the kernel release are read",
        )
        parser.add_argument(
            "--topo-file",
            type=Path,
            help="`nvidia-smi topo -m` output to take GPUs and GPU-NIC levels from",
        )
        parser.add_argument(
            "--vpd-file",
            type=Path,
            help="the VPD keywords `agent read-vpd` wrote, for the VPD files this process "
            "cannot read (they are root's)",
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
    run.add_argument(
        "--error-threshold",
        type=error_threshold,
        action="append",
        default=[],
        metavar="COUNTER=RATE/WINDOW",
        help="how fast an error counter may grow before its port is unhealthy, in errors per "
        "minute over a window (symbol_error=10/5m; 0 for any increase), or COUNTER=off; "
        "repeatable, over the defaults in docs/agent.md",
    )
    run.add_argument(
        "--taint-unhealthy",
        action="store_true",
        help="taint the Node kube-rdma.io/rdma-unhealthy:NoSchedule while its rails are "
        "unhealthy, for pods of other schedulers",
    )
    run.add_argument(
        "--dra-device-taints",
        choices=["auto", "on", "off"],
        default="auto",
        help="keep a DeviceTaintRule (resource.k8s.io) on each of this node's RDMA devices a "
        "DRA driver publishes while it is unhealthy: auto where the cluster serves "
        "DeviceTaintRules, on (the same, warning where it does not), off (and remove the "
        "rules left)",
    )
    read_vpd = verbs.add_parser(
        "read-vpd",
        help="write the VPD keywords ConnectX-8 Data Direct matching needs, for an agent that "
        "is not root (run as user 0 in an init container)",
    )
    read_vpd.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
    read_vpd.add_argument("--out", type=Path, required=True, help="the file to write")
    read_vpd.set_defaults(run=run_read_vpd)

    where = run.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", type=Path)
    where.add_argument("--in-cluster", action="store_true")
    run.set_defaults(run=run_agent)
    register_nccl_conf(subcommands)


def register_nccl_conf(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `nccl-conf`, run inside a pod (an init container) rather than on the node."""
    parser = subcommands.add_parser(
        "nccl-conf", help="write the NCCL settings for this pod's own RDMA ports (run in the pod)"
    )
    parser.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
    parser.add_argument("--proc-root", type=Path, default=Path("/proc"))
    parser.add_argument(
        "--addresses",
        type=address_list,
        help="the pod's addresses, comma-separated, instead of reading them from the kernel",
    )
    parser.add_argument("--roce-version", type=int, choices=[1, 2], default=2)
    parser.add_argument("--family", choices=["ipv4", "ipv6"], default="ipv4")
    parser.add_argument("--on-missing", choices=["fail", "warn"], default="fail")
    parser.add_argument("--out", type=Path, help="the file to write (default: standard output)")
    parser.add_argument("--termination-log", type=Path, default=Path("/dev/termination-log"))
    parser.add_argument(
        "--set",
        type=setting,
        action="append",
        default=[],
        metavar="NCCL_NAME=VALUE",
        help="a further line for the file, after the resolved ones (repeatable): the profile's "
        "own NCCL settings, so that ranks started over ssh read them too",
    )
    parser.add_argument(
        "--claim-data",
        type=Path,
        action="append",
        metavar="PATH",
        help="the pod's ResourceClaim device data: a DRA device metadata file, a ResourceClaim "
        "as JSON, or a directory of them (repeatable; default: "
        "/var/run/kubernetes.io/dra-device-attributes where it exists)",
    )
    parser.set_defaults(run=run_nccl_conf)


def address_list(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
    try:
        return tuple(ipaddress.ip_address(part.strip()) for part in text.split(",") if part)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def error_threshold(text: str) -> tuple[str, ErrorRule | None]:
    """An `--error-threshold` value: a judged counter and its rule, or None for off."""
    from agent.error_rules import ErrorRuleError, parse_error_threshold

    try:
        return parse_error_threshold(text)
    except ErrorRuleError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def setting(text: str) -> tuple[str, str]:
    """A `--set` value: an NCCL variable the resolver does not write itself, and its value."""
    from agent.nccl_conf import RESOLVED

    name, equals, value = text.partition("=")
    if not equals or not NCCL_NAME.match(name):
        raise argparse.ArgumentTypeError(f"{text!r} is not NCCL_NAME=VALUE")
    if name in RESOLVED:
        raise argparse.ArgumentTypeError(f"{name} is what nccl-conf resolves; it cannot be set")
    if "\n" in value:
        raise argparse.ArgumentTypeError(f"the value of {name} spans lines")
    return name, value


def run_read_vpd(args: argparse.Namespace) -> int:
    from agent.vpd_command import run_read_vpd as run

    return run(args)


def run_inspect(args: argparse.Namespace) -> int:
    from agent.discovery import discover
    from agent.publisher import ScanError
    from agent.vpd_command import vpd_reader
    from kube_rdma.core.topology import encode

    problem = _sources_problem(args)
    if problem:
        print(f"kube-rdma agent inspect: {problem}", file=sys.stderr)
        return 2
    vpd = vpd_reader(args.sysfs_root, args.vpd_file, quiet=True)
    try:
        topology = discover(args.sysfs_root, args.topo_file, args.proc_root, vpd=vpd)
    except (*ScanError, OSError) as e:
        print(f"kube-rdma agent inspect: {e}", file=sys.stderr)
        return 2
    print(encode(topology))
    if not topology.nics:
        # The document is still true (a node without RDMA), so the exit stays 0; the hint
        # says why it is empty, on stderr, where it stays out of a document piped on.
        print(f"kube-rdma agent inspect: {no_rdma_hint(args.sysfs_root)}", file=sys.stderr)
    return 0


def no_rdma_hint(sysfs_root: Path) -> str:
    """Why a scan found no RDMA device, and what to check."""
    where = sysfs_root / "class" / "infiniband"
    absent = "" if where.is_dir() else " (it does not exist)"
    return (
        f"no RDMA devices under {where}{absent}: this host has no RDMA NIC, its RDMA driver is "
        "not loaded (lsmod | grep -e mlx5_ib -e ib_uverbs), or this runs in a container "
        "without the host's /sys (mount it and pass --sysfs-root)"
    )


def run_nccl_conf(args: argparse.Namespace) -> int:
    from agent.nccl_conf import Wanted
    from agent.nccl_conf_command import Request, run

    request = Request(
        sysfs_root=args.sysfs_root,
        proc_root=args.proc_root,
        addresses=args.addresses,
        wanted=Wanted(args.roce_version, args.family),
        on_missing=args.on_missing,
        out=args.out,
        termination_log=args.termination_log,
        settings=tuple(args.set),
        claim_data=tuple(args.claim_data) if args.claim_data else None,
    )
    return run(request)


def run_agent(args: argparse.Namespace) -> int:
    if not args.node_name:
        log.error(
            "no node name: pass --node-name or set NODE_NAME (the downward API's spec.nodeName)"
        )
        return 2
    if args.interval <= 0 or args.recover_after < 1:
        log.error("--interval must be positive and --recover-after at least 1")
        return 2
    problem = _sources_problem(args)
    if problem:
        log.error("cannot start the agent: %s", problem)
        return 2
    return asyncio.run(_until_signalled(args))


def _sources_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with where the scan reads, checked before anything starts."""
    if not args.sysfs_root.is_dir():
        return (
            f"--sysfs-root {args.sysfs_root} is not a directory; give the root of a sysfs tree "
            "(/sys, or a copy of its class/ and bus/ folders)"
        )
    if args.topo_file is not None and not args.topo_file.is_file():
        return f"{args.topo_file}: cannot read: No such file or directory"
    return None


SHUTDOWN_TIMEOUT_SECONDS = 3.0
"""How long a stopping agent waits for the scan or patch under way; below the DaemonSet's
terminationGracePeriodSeconds (5), after which the kubelet sends SIGKILL."""


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived while the agent waited for its next scan."""


async def _until_signalled(args: argparse.Namespace) -> int:
    """Run the agent until SIGTERM or SIGINT (as PID 1 in a container nothing else stops it
    short of SIGKILL). A scan or patch under way is finished first, for at most
    SHUTDOWN_TIMEOUT_SECONDS; a signal during the wait between scans stops the agent at once."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(_serve(args, _sleep_until(stop)))
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    try:
        return await asyncio.wait_for(task, SHUTDOWN_TIMEOUT_SECONDS if stop.is_set() else None)
    except _Stopped:
        log.info("agent stopped", extra={"node": args.node_name})
    except TimeoutError:
        log.warning(
            "agent stopped before its patch finished; the next agent publishes again",
            extra={"node": args.node_name},
        )
    return 0


def _sleep_until(stop: asyncio.Event) -> Callable[[float], Awaitable[None]]:
    """The agent's wait between scans, cut short by `stop`."""

    async def sleep(seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
        if stop.is_set():
            raise _Stopped

    return sleep


async def _serve(
    args: argparse.Namespace, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> int:
    from kubernetes_asyncio import client

    from agent.discovery import discover
    from agent.dra_taints import DeviceTaints
    from agent.error_rules import error_rules
    from agent.publisher import Agent, AgentSettings
    from agent.sysfs import Problems
    from agent.vpd_command import vpd_reader
    from kube_rdma.kube.kubeconfig import load_config

    await load_config(args.kubeconfig, server=True)
    vpd = vpd_reader(args.sysfs_root, args.vpd_file)

    def scan(problems: Problems) -> Topology:
        return discover(args.sysfs_root, args.topo_file, args.proc_root, problems, vpd)

    settings = AgentSettings(
        node_name=args.node_name,
        sysfs_root=args.sysfs_root,
        proc_root=args.proc_root,
        topo_file=args.topo_file,
        interval=args.interval,
        recover_after=args.recover_after,
        taint_unhealthy=args.taint_unhealthy,
    )
    rules = error_rules(args.error_threshold)
    async with client.ApiClient() as api:
        log.info("agent started", extra={"node": args.node_name})
        taints = DeviceTaints(client.CustomObjectsApi(api), args.node_name, args.dra_device_taints)
        agent = Agent(
            client.CoreV1Api(api),
            settings,
            scan,
            sleep=sleep,
            error_rules=rules,
            device_taints=taints,
        )
        await agent.run()
    return 0
