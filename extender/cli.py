"""`kube-rdma extender` and `kube-rdma explain` (explain_cli.py): the scheduler extender's
commands."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from extender.explain_cli import register_explain
from extender.levels.vocabularies import PRESETS
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS

log = logging.getLogger("kube_rdma.extender")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `extender` and `explain` to the `kube-rdma` command."""
    _register_extender(subcommands)
    register_explain(subcommands)


def _register_extender(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    extender = subcommands.add_parser("extender", help="serve the kube-scheduler extender")
    from extender import listening

    listening.register(extender)
    extender.add_argument("--weights", type=Path, help="score weights YAML (default: built-in)")
    extender.add_argument(
        "--gpu-resource", action="append", help="GPU resource name (repeatable; nvidia.com/gpu)"
    )
    extender.add_argument(
        "--rdma-resource",
        action="append",
        help="pattern of RDMA resource names, * as wildcard (repeatable; replaces the default: "
        + ", ".join(DEFAULT_RDMA_PATTERNS)
        + ")",
    )
    extender.add_argument(
        "--dra-device",
        action="append",
        type=_dra_rule,
        metavar="KIND=DRIVER:ATTRIBUTE=VALUE",
        help="which DRA devices are GPUs (gpu) and RDMA NICs (nic): the driver and one attribute "
        "value (repeatable; replaces the defaults: gpu=gpu.nvidia.com:type=gpu, "
        "nic=dra.net:rdma=true, nic=sriovnetwork.k8snetworkplumbingwg.io:rdmaCapable=true)",
    )
    extender.add_argument(
        "--domain-label",
        action="append",
        help="node label of a network domain for gang placement, narrowest first (repeatable; "
        "default: kube-rdma.io/leaf, kube-rdma.io/spine, "
        "topology.kubernetes.io/zone)",
    )
    extender.add_argument(
        "--topology",
        choices=["auto", *sorted(PRESETS)],
        help="the vocabulary of the cluster's network labels for gang placement: a preset "
        "(topograph: fabric.topograph.run/tier-N; topograph-v0: network.topology.nvidia.com/...; "
        "eks, gke, oci: the cloud's labels; kube-rdma: the default), or auto: read from the "
        "labels the nodes carry; --domain-label replaces its switch levels",
    )
    extender.add_argument(
        "--topology-object",
        type=_topology_object,
        metavar="KIND:NAME",
        help="take the levels from a Kueue Topology (kueue:NAME) or a KAI Topology (kai:NAME), "
        "watched so that a change applies to the next gang planned; the --topology preset "
        "applies until it is read (needs --kubeconfig or --in-cluster)",
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
        help="seconds a gang member's bind request waits for the others (keep below "
        "httpTimeout); the member stays arrived after its request fails",
    )
    extender.add_argument(
        "--barrier-progress-timeout",
        type=float,
        default=30.0,
        help="seconds a gang waits at the bind barrier for its next member before it is "
        "given up and planned again",
    )
    extender.add_argument(
        "--native-gang-scheduling",
        choices=("auto", "on", "off"),
        default="auto",
        help="whether kube-scheduler's own GangScheduling holds the pods of a scheduling.k8s.io "
        "Workload or PodGroup: auto and on bind those gangs without the extender's barrier "
        "(auto: for every group read off a served API); off keeps the barrier (docs/gangs.md)",
    )
    extender.add_argument(
        "--percentage-of-nodes-to-score",
        type=_percentage,
        default=100,
        metavar="PERCENT",
        help="kube-scheduler's percentageOfNodesToScore for the RDMA scheduler (0: its adaptive "
        "default); tells a candidate list cut short by sampling from one where kube-scheduler "
        "ruled a planned node out, which has its gang planned again at once; 100 is what "
        "manifests/scheduler configures",
    )
    extender.add_argument(
        "--nominate-members",
        action="store_true",
        help="write each planned gang member's status.nominatedNodeName (its planned node), so "
        "that kube-scheduler tries that node first and sends one name per member call "
        "(PreferNominatedNode, kube-scheduler 1.22 and later); needs patch on pods/status. With "
        "it, gangs need no percentageOfNodesToScore of 100 (docs/gangs.md)",
    )
    extender.add_argument(
        "--plan-namespace",
        default=os.environ.get("POD_NAMESPACE", "kube-rdma"),
        help="namespace of the ConfigMaps that record gang plans, so that the extender that "
        "serves next finishes the gangs in flight (default: $POD_NAMESPACE, else kube-rdma)",
    )
    extender.add_argument(
        "--require-acceptance",
        action="store_true",
        help="only nodes that passed `kube-rdma acceptance run --label` take RDMA pods",
    )
    extender.add_argument(
        "--hold-after",
        type=float,
        default=120.0,
        help="seconds a gang waits without a plan before it holds a domain to drain for it "
        "(pods of the same or lower priority may no longer start there)",
    )
    extender.add_argument(
        "--hold-max-share",
        type=float,
        default=0.5,
        help="the most of the cluster's GPUs holds may take together (0-1); the oldest "
        "waiting gang of the highest priority may go past it",
    )
    extender.add_argument(
        "--scheduler-name",
        default="rdma-scheduler",
        help="the kube-scheduler profile the extender serves: its pending gang members are "
        "gangs waiting even when kube-scheduler never sends them (a full cluster)",
    )
    extender.add_argument(
        "--broken-gang-grace",
        type=float,
        help="seconds a running gang may lack members (evicted, node gone) before its other "
        "members are evicted too, so that its operator restarts the job (default: never)",
    )
    extender.add_argument(
        "--no-gang-preemption",
        action="store_true",
        help="gangs never preempt lower-priority pods (they still hold nodes to drain)",
    )
    from extender.preemption.flags import add_limit_flags

    add_limit_flags(extender)
    where = extender.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster-snapshot", type=Path, help="a JSON/YAML file of Nodes and Pods")
    where.add_argument("--kubeconfig", type=Path)
    where.add_argument("--in-cluster", action="store_true")
    extender.set_defaults(run=run_extender)


def _topology_object(value: str) -> Any:
    from extender.levels.watched import parse_ref

    try:
        return parse_ref(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _dra_rule(value: str) -> Any:
    from kube_rdma.core.dra.kinds import parse_rule

    try:
        return parse_rule(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _percentage(value: str) -> int:
    if not value.isdigit() or int(value) > 100:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a percentage from 0 to 100 (0: kube-scheduler's adaptive default)"
        )
    return int(value)


def run_extender(args: argparse.Namespace) -> int:
    from aiohttp import web

    from extender import listening
    from extender.app import SHUTDOWN_TIMEOUT_SECONDS

    if (problem := listening.problem(args)) is not None:
        log.error("%s", problem)
        return 2
    if args.topology_object and args.cluster_snapshot:
        log.error("--topology-object is watched: it needs --kubeconfig or --in-cluster")
        return 2
    if (args.broken_gang_grace or 0) < 0:
        log.error("--broken-gang-grace is a number of seconds, 0 or more")
        return 2
    if not 0 <= args.hold_max_share <= 1 or args.hold_after < 0:
        log.error(
            "--hold-max-share is a share of the cluster's GPUs, 0 to 1 (got %g), and "
            "--hold-after a number of seconds, 0 or more (got %g)",
            args.hold_max_share,
            args.hold_after,
        )
        return 2
    # A certificate, weights or snapshot file, or a kubeconfig that cannot be used raises before
    # "listening" is logged: kube_rdma_cli says it in one line, exit status 2.
    listeners = listening.listen(args)

    def listen(_: str) -> None:
        log.info("extender listening on %s", listeners.url)
        log.info("extender metrics listening on %s", listeners.metrics_url)

    web.run_app(
        _extender_app(args, listeners.tls, listeners.metrics),
        sock=listeners.verbs,
        ssl_context=listeners.tls.context if listeners.tls else None,
        # aiohttp prints once the app exists (weights, snapshot or kubeconfig read): only
        # then is "listening" true, on the port bound (--port 0: any free one).
        print=listen,
        access_log=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS,
    )
    return 0


async def _extender_app(args: argparse.Namespace, tls: Any = None, metrics: Any = None) -> Any:
    """The app around its cluster source, serving its metrics on the socket `metrics`; the live
    source's API client needs the running loop."""
    app = await _scheduler_app(args, tls)
    if metrics is not None:
        from extender.app import serve_metrics

        serve_metrics(app, metrics)
    return app


async def _scheduler_app(args: argparse.Namespace, tls: Any = None) -> Any:

    from kubernetes_asyncio import client

    from extender.app import Settings, create_app
    from extender.book.configmaps import ConfigMapRecords
    from extender.cluster.devices import DraNames
    from extender.cluster.disruptions import LiveDisruptions, ModelDisruptions
    from extender.cluster.live import LiveSource
    from extender.cluster.model import Cluster
    from extender.cluster.nominations import LiveNominations
    from extender.cluster.snapshot import SnapshotSource
    from extender.gangs.planner import GangSettings
    from extender.gangs.settings import level_settings
    from extender.preemption.contention import ContentionSettings
    from extender.preemption.flags import limit_settings
    from kube_rdma.core.dra.kinds import DEFAULT_KIND_RULES
    from kube_rdma.kube.kubeconfig import load_config

    gangs = GangSettings(
        plan_timeout=args.plan_timeout,
        barrier_timeout=args.barrier_timeout,
        barrier_progress_timeout=args.barrier_progress_timeout,
        native_gang_scheduling=args.native_gang_scheduling,
        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
    )
    gangs = level_settings(gangs, args.topology, args.domain_label)
    settings = Settings(
        weights_file=args.weights,
        gpu_resources=tuple(args.gpu_resource or ("nvidia.com/gpu",)),
        rdma_resources=tuple(args.rdma_resource or DEFAULT_RDMA_PATTERNS),
        gangs=gangs,
        require_acceptance=args.require_acceptance,
        contention=ContentionSettings(
            hold_after=args.hold_after,
            hold_share=args.hold_max_share,
            preemption=not args.no_gang_preemption,
            broken_grace=args.broken_gang_grace,
            scheduler_name=args.scheduler_name,
            **limit_settings(args),
        ),
        own_pods_only=True,
    )
    cluster = Cluster(
        DraNames(gpu=settings.gpu_resources[0]), tuple(args.dra_device or DEFAULT_KIND_RULES)
    )
    if args.cluster_snapshot:
        snapshot = SnapshotSource.from_file(args.cluster_snapshot, cluster)
        return create_app(settings, snapshot, tls, None, ModelDisruptions(snapshot.cluster))
    await load_config(args.kubeconfig, server=True)
    api = client.ApiClient()
    custom = client.CustomObjectsApi(api)
    source = LiveSource(client.CoreV1Api(api), custom_api=custom, cluster=cluster)
    records = ConfigMapRecords(client.CoreV1Api(api), args.plan_namespace, _identity())
    nominations = LiveNominations(client.CoreV1Api(api)) if args.nominate_members else None
    disruptions = LiveDisruptions(client.CoreV1Api(api))
    app = create_app(settings, source, tls, records, disruptions, nominations)
    if args.topology_object:
        from extender.app import EXTENDER
        from extender.levels.watched import TopologyWatch

        requirements = app[EXTENDER].scheduler.requirements
        watch = TopologyWatch(
            client.CustomObjectsApi(api), args.topology_object, requirements.use, gangs.nvlink
        )
        app.cleanup_ctx.append(watch.context)

    async def close(_: Any) -> None:
        await api.close()

    app.on_cleanup.append(close)
    return app


def _identity() -> str:
    """This process, as its gang plan records name it: the pod, and one run of it."""
    import socket
    import uuid

    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
