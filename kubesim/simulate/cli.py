"""`kube-rdma simulate` and `kube-rdma snapshot`: their options, and the runs behind them."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import orjson

from kube_rdma.core.config_file import ConfigError


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `simulate` and `snapshot` to the `kube-rdma` command."""
    _register_simulate(subcommands)
    _register_snapshot(subcommands)


def _register_simulate(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "simulate",
        help="try scoring weights on a cluster snapshot, in simulated time",
        description="Schedule a workload on a snapshot of a cluster with plain kube-scheduler "
        "and with the extender under each weights file or sweep value, in simulated time, and "
        "compare them (docs/simulate.md).",
    )
    parser.add_argument("--cluster", type=Path, required=True, help="snapshot file")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", type=Path, help="workload file (YAML)")
    source.add_argument(
        "--generate",
        metavar="jobs=N,seed=S,...",
        help="generated workload: jobs, seed, hours, load, gangs, network, priorities, dra "
        "(docs/simulate.md)",
    )
    parser.add_argument(
        "--weights", type=Path, action="append", default=[], help="weights file (repeatable)"
    )
    parser.add_argument("--sweep", metavar="CRITERION=v1,v2", help="one variant per value")
    parser.add_argument(
        "--native-gangs",
        action="store_true",
        help="give gangs a native PodGroup and add kube-scheduler with its own gang scheduling",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON document")
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="draw the results")
    parser.add_argument("--seed", type=int, default=0, help="seed of a generated workload")
    parser.add_argument(
        "--cycle", type=float, default=0.01, help="simulated seconds per scheduling cycle"
    )
    parser.set_defaults(run=run_simulate)


def _register_snapshot(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kube_rdma.kube.kubeconfig import add_cluster_flags

    parser = subcommands.add_parser(
        "snapshot",
        help="save a cluster's Nodes, running pods, PodGroups and workloads to a file",
        description="Save what `kube-rdma simulate` and `kube-rdma extender "
        "--cluster-snapshot` read of a live cluster.",
    )
    add_cluster_flags(parser, namespace=False)
    parser.add_argument("--out", type=Path, required=True, help="file to write (.json or YAML)")
    parser.add_argument(
        "--anonymize",
        action="store_true",
        help="rename nodes, namespaces and pods; rewrite GIDs, netdevs, PCI addresses, hosts",
    )
    parser.set_defaults(run=run_snapshot)


def run_simulate(args: argparse.Namespace) -> int:
    from kubesim.simulate.claim_jobs import claim_templates
    from kubesim.simulate.cluster import load_cluster
    from kubesim.simulate.run import Settings
    from kubesim.simulate.simulation import run_variants
    from kubesim.simulate.variants import build_variants, with_pod_groups
    from kubesim.simulate.workload import network_warnings, parse_generate, read_workload

    if args.plot is not None:
        from kubesim.simulate.plot import check_plotting

        check_plotting(args.plot)
    if getattr(args, "log_level", "info") != "debug":
        # The extender logs every gang it plans, binds and gives up: thousands of lines in a
        # day, which the table sums up (--log-level debug shows them).
        logging.getLogger("kube_rdma.extender").setLevel(logging.ERROR)
    variants = build_variants(args.weights, args.sweep, getattr(args, "native_gangs", False))
    if args.cycle < 0:
        raise ConfigError(f"--cycle must not be negative, got {args.cycle:g}")
    cluster = load_cluster(args.cluster)
    shape = cluster.shape()
    if args.workload is not None:
        jobs, source = read_workload(args.workload, shape), str(args.workload)
    else:
        text = args.generate if "seed=" in args.generate else f"seed={args.seed},{args.generate}"
        generated = parse_generate(text)
        jobs, source = generated.stream(shape), f"generate {text}"
        if generated.network is None:
            source += f", network={shape.network()} from the nodes' link layer"
    if getattr(args, "native_gangs", False):
        jobs = with_pod_groups(jobs)
    claim_templates(jobs, cluster.model.cluster.dra)  # refuses claim jobs the cluster cannot serve
    warnings = network_warnings(jobs, shape)
    for warning in warnings:
        print(f"kube-rdma simulate: warning: {warning}", file=sys.stderr)
    progress = _Bar() if sys.stderr.isatty() else None
    settings = Settings(cycle=args.cycle)
    document = run_variants(cluster, jobs, source, variants, settings, progress, warnings)
    if progress is not None:
        progress.done()
    _show(document, args)
    return 0


def _show(document: dict[str, Any], args: argparse.Namespace) -> None:
    from kubesim.simulate.report import table

    if args.json:
        sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(table(document))
    if args.plot is not None:
        from kubesim.simulate.plot import plot

        plot(document, args.plot)


class _Bar:
    """A progress line on stderr: the variant and how much of its simulated span is done."""

    WIDTH = 30

    def __call__(self, variant: Any, done: float) -> None:
        filled = int(done * self.WIDTH)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        sys.stderr.write(f"\r{variant.name[:24]:<24} [{bar}] {100 * done:3.0f} %")
        sys.stderr.flush()

    def done(self) -> None:
        sys.stderr.write("\r" + " " * (self.WIDTH + 34) + "\r")


def run_snapshot(args: argparse.Namespace) -> int:
    from kube_rdma.kube.kubeconfig import load_config
    from kubesim.simulate.snapshot import take_snapshot

    async def snapshot() -> tuple[int, object]:
        used = await load_config(args.kubeconfig, args.context)
        return await take_snapshot(args.out, args.anonymize), used

    count, used = asyncio.run(snapshot())
    print(f"wrote {count} objects to {args.out} (read with {used})", file=sys.stderr)
    return 0
