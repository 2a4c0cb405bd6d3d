"""The flags of `kube-rdma extender` that bound what gangs may do: their size, how often and how
far they preempt, how many evictions a minute, and whether a PodDisruptionBudget may be
bypassed. Registered on the extender's parser (extender/cli.py) and read back into
ContentionSettings (extender/preemption/settings.py); only argparse is imported, as the
command line is built for every subcommand."""

from __future__ import annotations

import argparse
from typing import Any


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-gang-size",
        type=_count(1),
        help="the most members a gang may declare; a larger gang is refused and never placed "
        "(default 4096: 32,768 GPUs at 8 a pod)",
    )
    parser.add_argument(
        "--preemption-backoff",
        type=_seconds,
        help="seconds before a gang that preempted and was not placed may preempt again, "
        "doubled each further time (default 300)",
    )
    parser.add_argument(
        "--preemption-backoff-max",
        type=_seconds,
        help="the longest preemption backoff, in seconds (default 3600)",
    )
    parser.add_argument(
        "--eviction-budget",
        type=_count(0),
        help="evictions the extender may make in any minute, cluster-wide (gang preemptions "
        "and teardowns); a preemption that does not fit whole is not made (default 64)",
    )
    parser.add_argument(
        "--preempt-across-namespaces-class",
        action="append",
        metavar="PRIORITYCLASS",
        help="only gangs of this PriorityClass (repeatable), or of a namespace named by "
        "--preempt-across-namespaces-namespace, preempt pods of other namespaces; the others "
        "preempt in their own namespace only (default: every gang may, as kube-scheduler "
        "lets any pod)",
    )
    parser.add_argument(
        "--preempt-across-namespaces-namespace",
        action="append",
        metavar="NAMESPACE",
        help="gangs of this namespace may preempt pods of other namespaces (repeatable)",
    )
    parser.add_argument(
        "--delete-when-eviction-refused",
        action="store_true",
        help="delete a victim whose eviction a PodDisruptionBudget refused, bypassing the "
        "budget (default: the pod stays, and the preemption or teardown is given up)",
    )


def limit_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ContentionSettings fields the flags give (those not given keep their defaults)."""
    given = {
        "max_gang_size": args.max_gang_size,
        "backoff": args.preemption_backoff,
        "backoff_cap": args.preemption_backoff_max,
        "eviction_budget": args.eviction_budget,
    }
    found: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    found["delete_when_refused"] = args.delete_when_eviction_refused
    found["across_classes"] = tuple(args.preempt_across_namespaces_class or ())
    found["across_namespaces"] = tuple(args.preempt_across_namespaces_namespace or ())
    return found


def _count(least: int) -> Any:
    def parse(value: str) -> int:
        if not value.isdigit() or int(value) < least:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of {least} or more")
        return int(value)

    return parse


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds, 0 or more")
    return seconds
