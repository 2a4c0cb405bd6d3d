"""What `explain` says of a pod's gang: its plan, or the numbers of why it has none; how long
it has waited and why; the nodes it holds; and, for every other pod, the nodes a gang holds
against it."""

from __future__ import annotations

from extender.gangs.contention import Contention
from extender.gangs.holds import HoldBook
from extender.gangs.identity import Gang, Singleton
from extender.gangs.planner import Planner
from extender.gangs.reservations import GangKey
from extender.podview import PodView
from kube_rdma.core.objects import Json


def gang_summary(
    gang: Gang | Singleton,
    view: PodView,
    planner: Planner,
    contention: Contention,
    holds: HoldBook,
) -> Json:
    if isinstance(gang, Singleton):
        return {"singleton": gang.reason or "the pod names no gang"}
    summary: Json = {"name": str(gang), "size": gang.size, "source": gang.source}
    plan = planner.plans.get(gang.key)
    if plan is None:
        summary["plan"] = None
        # What the filter answers kube-scheduler for this member now: the numbers.
        summary["capacity"] = planner.no_fit_reason(view, gang)
    else:
        summary["plan"] = {"domain": plan.domain, "nodes": sorted(set(plan.slots))}
    summary["levels"] = planner.requirements.explain(view, gang, plan.slots if plan else ())
    waiting = contention.waiting.get(gang.key)
    if waiting is not None and plan is None:
        summary["waiting"] = {
            "priority": waiting.priority,
            "seconds": round(contention.now() - waiting.since, 1),
            "reason": waiting.reason,
        }
    hold = holds.get(gang.key)
    if hold is not None:
        summary["hold"] = {
            "domain": hold.domain,
            "nodes": sorted(hold.nodes),
            "gpus": hold.gpus,
            "victims": [name for name, _ in hold.units],
        }
    return summary


def mark_held(body: Json, holds: HoldBook, priority: int, gang: GangKey | None) -> None:
    """Nodes held for another gang fail for this pod as its filter says: unresolvable."""
    for entry in body["nodes"]:
        hold = holds.blocking(entry["node"], priority, gang)
        if hold is None or entry["verdict"] == "unresolvable":
            continue
        body["summary"][entry["verdict"]] -= 1
        body["summary"]["unresolvable"] += 1
        entry.pop("scores", None)
        entry.pop("total", None)
        entry.update(verdict="unresolvable", reason=f"node {hold.describe()}")
