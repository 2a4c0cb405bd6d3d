"""`kube-rdma acceptance render|verdict|run` and `kube-rdma diagnose`."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.plan import Mode
from fabric.render import DEFAULT_IMAGE, DEFAULT_PROGRAM
from fabric.verdict import DEFAULT_FRACTION

if TYPE_CHECKING:
    from typing import TypeAlias

    Subcommands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


def register(subcommands: Subcommands) -> None:
    acceptance = subcommands.add_parser(
        "acceptance", help="prove the RDMA fabric with nccl-tests before real jobs run"
    )
    verbs = acceptance.add_subparsers(dest="verb", required=True)
    _register_render(verbs)
    _register_verdict(verbs)
    _register_run(verbs)
    diagnose = subcommands.add_parser(
        "diagnose", help="did NCCL use RDMA: a pod, or an NCCL_DEBUG=INFO log"
    )
    diagnose.add_argument(
        "pod",
        nargs="?",
        metavar="POD|FILE",
        help="a pod, NAMESPACE/NAME or NAME (in -n, else the context's namespace); or an "
        "NCCL_DEBUG=INFO log: a file that exists here, or a name ending .log or .txt, or - for "
        "standard input",
    )
    diagnose.add_argument("--nccl-log", type=Path, help="an NCCL_DEBUG=INFO log file")
    from kube_rdma.kube.kubeconfig import add_cluster_flags

    add_cluster_flags(diagnose)
    diagnose.add_argument("--json", action="store_true")
    diagnose.set_defaults(run=run_diagnose)


def _test_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", required=True, help="the RDMA profile the workers opt into")
    parser.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.PAIRS.value)
    parser.add_argument("--image", default=DEFAULT_IMAGE)
    parser.add_argument("--program", default=DEFAULT_PROGRAM, help="the nccl-tests binary")
    parser.add_argument("--bytes", default="8:8G", help="MIN:MAX message sizes (8:8G)")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--gpu-resource", default="nvidia.com/gpu")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--name", default="acceptance", help="prefix of the objects' names")
    parser.add_argument(
        "--soak", type=_duration, help="repeat the largest size this long (90s, 30m, 2h)"
    )


def _register_render(verbs: Subcommands) -> None:
    render = verbs.add_parser("render", help="print the objects of an acceptance run as YAML")
    render.add_argument("--profiles", type=Path, help="the webhook's profiles file")
    render.add_argument(
        "--nodes", required=True, help="NODE[:LEAF],... (the leaf orders pairs mode)"
    )
    _test_options(render)
    render.set_defaults(run=run_render)


def _register_verdict(verbs: Subcommands) -> None:
    verdict = verbs.add_parser("verdict", help="judge one nccl-tests output")
    verdict.add_argument("--log", type=Path, required=True)
    expected = verdict.add_mutually_exclusive_group()
    expected.add_argument("--min-busbw", type=float, help="GB/s the best bus bandwidth must reach")
    expected.add_argument("--topology", type=Path, help="a node's kube-rdma.io/topology document")
    verdict.add_argument(
        "--nodes",
        type=int,
        help="with --topology: how many nodes the run spanned (default: the hosts in the "
        "log's rank lines); on one node NCCL stays on NVLink/PCIe and the NICs set no bound",
    )
    verdict.add_argument("--fraction", type=float, default=DEFAULT_FRACTION)
    verdict.add_argument("--soak", action="store_true", help="also fail on a busbw drop")
    verdict.add_argument("--json", action="store_true")
    verdict.set_defaults(run=run_verdict)


def _register_run(verbs: Subcommands) -> None:
    run = verbs.add_parser("run", help="render, apply, wait, judge and clean up")
    from kube_rdma.kube.kubeconfig import add_cluster_flags

    add_cluster_flags(run, namespace=False)  # --namespace: the run's own (_test_options)
    run.add_argument("--nodes", required=True, help="NODE,... (leaves from kube-rdma.io/leaf)")
    run.add_argument("--min-busbw", type=float)
    run.add_argument("--fraction", type=float, default=DEFAULT_FRACTION)
    run.add_argument("--label", action="store_true", help="label the nodes passed or failed")
    run.add_argument("--round-timeout", type=float, default=1800.0, help="seconds per round")
    _test_options(run)
    run.set_defaults(run=run_run)


def _duration(text: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration like 90s, 30m or 2h"
        ) from None


def _options(args: argparse.Namespace) -> Any:
    from fabric.render import Options, parse_bytes

    low, high = parse_bytes(args.bytes)
    return Options(
        run=args.name,
        namespace=args.namespace,
        profile=args.profile,
        image=args.image,
        program=args.program,
        min_bytes=low,
        max_bytes=high,
        gpus_per_node=args.gpus_per_node,
        gpu_resource=args.gpu_resource,
        soak_seconds=args.soak,
    )


def run_render(args: argparse.Namespace) -> int:
    import yaml

    from fabric.plan import plan
    from fabric.render import render
    from fabric.sshkey import generate
    from kube_rdma.core.config_file import ConfigError
    from webhook.profiles import BUILTIN
    from webhook.profiles.loader import load_profiles

    try:
        profiles = load_profiles(args.profiles) if args.profiles else BUILTIN
        options = _options(args)
    except (ConfigError, ValueError) as e:
        print(f"kube-rdma acceptance render: {e}", file=sys.stderr)
        return 2
    if args.profile not in profiles.profiles:
        known = ", ".join(sorted(profiles.profiles))
        print(
            f"kube-rdma acceptance render: no profile {args.profile!r} (known: {known})",
            file=sys.stderr,
        )
        return 2
    try:
        nodes, leaves = parse_nodes(args.nodes)
    except ValueError as e:
        print(f"kube-rdma acceptance render: {e}", file=sys.stderr)
        return 2
    groups = plan(nodes, leaves, Mode(args.mode))
    sys.stdout.write(yaml.safe_dump_all(render(options, groups, generate()), sort_keys=False))
    return 0


def parse_nodes(text: str) -> tuple[list[str], dict[str, str]]:
    """`NODE[:LEAF],...` as the nodes in order and their leaves; ValueError unless it names at
    least two nodes, each once."""
    entries = [n.strip() for n in text.split(",") if n.strip()]
    nodes = [e.partition(":")[0] for e in entries]
    twice = sorted({n for n in nodes if nodes.count(n) > 1})
    if twice:
        raise ValueError(
            f"--nodes {text}: names {', '.join(twice)} more than once; an acceptance run needs "
            "at least two distinct nodes, each named once"
        )
    if len(nodes) < 2:
        raise ValueError(
            f"--nodes {text}: an acceptance run needs at least two distinct nodes "
            "(NODE[:LEAF],NODE[:LEAF],...): nccl-tests between nodes is what tests the fabric"
        )
    return nodes, {e.partition(":")[0]: e.partition(":")[2] for e in entries}


def run_verdict(args: argparse.Namespace) -> int:
    from fabric import nccl_log, nccl_tests, verdict

    try:
        text = args.log.read_text(errors="replace")
        run = nccl_tests.parse(text)
    except (OSError, ValueError) as e:
        print(f"kube-rdma acceptance verdict: {args.log}: {_reason(e)}", file=sys.stderr)
        return 2
    try:
        expected = _expectation(args, args.nodes or len(run.hosts))
    except (OSError, ValueError) as e:
        print(
            f"kube-rdma acceptance verdict: --topology {args.topology}: {_reason(e)}",
            file=sys.stderr,
        )
        return 2
    answer = verdict.judge(run, nccl_log.analyze(text), expected)
    if args.soak and (extra := verdict.soak_reasons(run)):
        answer["reasons"] += extra
        answer["verdict"] = "fail"
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print(verdict.headline(answer))
        for reason in answer["reasons"]:
            print(f"  {reason}")
    return 0 if answer["verdict"] == "pass" else 1


def _reason(error: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        return (
            f"not a kube-rdma.io/topology document ({_problems(error.error_count())}; first: "
            f"{where}: {first['msg']}); copy the node's annotation, kubectl get node NODE -o "
            "jsonpath='{.metadata.annotations.kube-rdma\\.io/topology}'"
        )
    if isinstance(error, OSError):
        return f"{error.strerror or error}; check the path"
    return str(error)


def _problems(count: int) -> str:
    return "1 problem" if count == 1 else f"{count} problems"


def _expectation(args: argparse.Namespace, nodes: int) -> Any:
    from fabric.verdict import NO_THRESHOLD, Expectation, from_topology
    from kube_rdma.core.topology import decode

    if args.min_busbw is not None:
        return Expectation(args.min_busbw, "--min-busbw")
    if args.topology is not None:
        topology = decode(args.topology.read_text())
        if nodes == 1:
            return Expectation(None, "one node: its traffic never reaches the NICs")
        return from_topology(topology, args.fraction)
    return Expectation(None, NO_THRESHOLD)


def run_run(args: argparse.Namespace) -> int:
    try:
        parse_nodes(args.nodes)
    except ValueError as e:
        print(f"kube-rdma acceptance run: {e}", file=sys.stderr)
        return 2
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from kubernetes_asyncio import client

    from fabric.report import table
    from fabric.run import AcceptanceRun, Settings
    from fabric.sshkey import generate
    from kube_rdma.kube.errors import ApiError
    from kube_rdma.kube.kubeconfig import load_config

    options = _options(args)
    nodes = tuple(n.strip() for n in args.nodes.split(",") if n.strip())
    settings = Settings(
        options,
        nodes,
        Mode(args.mode),
        args.fraction,
        args.min_busbw,
        args.label,
        args.round_timeout,
    )
    await load_config(args.kubeconfig, args.context)
    async with client.ApiClient() as api:
        core = client.CoreV1Api(api)
        try:
            runner = AcceptanceRun(core, settings, generate(), sys.stderr)
            outcomes = await runner.run()
        except ApiError as e:
            print(f"kube-rdma acceptance run: {e}", file=sys.stderr)
            return 2
    sys.stdout.write(table(outcomes, runner.leaves))
    return 0 if all(o.passed for o in outcomes) else 1


LOG_SUFFIXES = (".log", ".txt")
POD_REF = re.compile(r"(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
"""NAMESPACE/NAME or NAME, as Kubernetes spells them (a DNS label, a DNS subdomain)."""


def run_diagnose(args: argparse.Namespace) -> int:
    if args.nccl_log is not None and args.pod is not None:
        print(
            f"kube-rdma diagnose: give a POD or a log ({args.pod!r} and --nccl-log "
            f"{args.nccl_log}), not both",
            file=sys.stderr,
        )
        return 2
    if args.nccl_log is not None:
        return _diagnose_log(args.nccl_log, args.json)
    if args.pod is None:
        print(
            "kube-rdma diagnose: give a POD (NAMESPACE/NAME), an NCCL log FILE, or - to read "
            "the log from standard input",
            file=sys.stderr,
        )
        return 2
    log = _as_log(args.pod)
    if log is not None:
        return _diagnose_log(log, args.json)
    return asyncio.run(_diagnose_pod(args))


def _as_log(argument: str) -> Path | None:
    """The file `kube-rdma diagnose ARGUMENT` reads, or None when ARGUMENT names a pod."""
    path = Path(argument)
    if argument == "-":
        return path
    if path.exists():
        if POD_REF.fullmatch(argument):
            print(
                f"kube-rdma diagnose: {argument} is a file here: reading it as an NCCL log, "
                "not as a pod",
                file=sys.stderr,
            )
        return path
    if argument.lower().endswith(LOG_SUFFIXES):
        return path  # reading it says that no such file exists
    return None


def _diagnose_log(path: Path, as_json: bool) -> int:
    from fabric import diagnose, nccl_log

    name = "standard input" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            text = sys.stdin.buffer.read().decode(errors="replace")
        else:
            text = path.read_text(errors="replace")
    except FileNotFoundError:
        print(
            f"kube-rdma diagnose: {path}: no such file (an argument ending .log or .txt, or "
            "given to --nccl-log, is read as an NCCL log); check the path",
            file=sys.stderr,
        )
        return 2
    except OSError as e:
        print(
            f"kube-rdma diagnose: {name}: {e.strerror or e}; give an NCCL log file",
            file=sys.stderr,
        )
        return 2
    report = nccl_log.analyze(text)
    if not report.seen:
        print(f"kube-rdma diagnose: {name}: {diagnose.NO_LINES}", file=sys.stderr)
        return 2
    answer = diagnose.log_answer(report)
    sys.stdout.write(json.dumps(answer, indent=2) + "\n" if as_json else diagnose.text(answer))
    return diagnose.exit_status(report)


async def _diagnose_pod(args: argparse.Namespace) -> int:
    from kubernetes_asyncio import client

    from fabric.pod_report import pod_answer, text
    from kube_rdma.kube.errors import ApiError
    from kube_rdma.kube.kubeconfig import load_config

    namespace, _, name = args.pod.rpartition("/")
    used = await load_config(args.kubeconfig, args.context)
    namespace = namespace or args.namespace or used.namespace  # NAMESPACE/, -n, the context's
    async with client.ApiClient() as api:
        try:
            answer = await pod_answer(client.CoreV1Api(api), namespace or "default", name)
        except ApiError as e:
            print(f"kube-rdma diagnose: {e}", file=sys.stderr)
            return 2
    sys.stdout.write(json.dumps(answer, indent=2) + "\n" if args.json else text(answer))
    log = answer["log"]
    return 0 if log is None or log["rdma"] else 1
