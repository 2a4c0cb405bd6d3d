"""Why is my pod pending? Every node's verdict for a pod, and how the passing ones scored; for a
gang member, what its gang has: its plan, or the numbers of why it has none, how long it has
waited and why, the nodes it holds; and, for every other pod, the nodes a gang holds against it.
A pod already bound says where, by which scheduler and when (`bound_to`); its own node is judged
without its own requests, and a gang bound whole says so rather than asking for room.

The same body serves the JSON answer of `GET /explain` and, rendered by `table`, the readable
one that `kube-rdma explain NAMESPACE/POD` prints. The JSON keeps kube-scheduler's words (a
node that fails may fit after preemption, an unresolvable one never); the table says what they
mean to a reader, in the words the demo uses too: pass, busy, unsuitable.
"""

from __future__ import annotations

from collections import Counter

from extender.book.holds import HoldBook
from extender.book.reservations import GangKey
from extender.cluster.trim import DEFAULT_SCHEDULER, SCHEDULED
from extender.core import Core
from extender.engine import Assessment
from extender.filters import Verdict
from extender.gangs.identity import Gang, Singleton
from extender.gangs.native import native_line, native_summary
from extender.gangs.planner import Planner
from extender.podview import PodView
from extender.preemption.contention import Contention
from extender.preemption.priority import pod_priority
from extender.upkeep import gang_key
from extender.weights import Weights
from kube_rdma.core.objects import Json

SHOWN = {"pass": "pass", "fail": "busy", "unresolvable": "unsuitable"}
"""The table's word for each verdict."""
BOUND_HERE = "the pod is bound here; judged without its own requests"


def bound_to(pod: Json) -> Json | None:
    """Where a bound pod is, which scheduler bound it (spec.schedulerName) and when (its
    PodScheduled condition's lastTransitionTime; None when the pod has none); None when the pod
    is not bound."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return None
    scheduled = [
        c
        for c in (pod.get("status") or {}).get("conditions") or []
        if c.get("type") == SCHEDULED and c.get("status") == "True"
    ]
    return {
        "node": str(spec["nodeName"]),
        "scheduler": str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        "at": scheduled[0].get("lastTransitionTime") if scheduled else None,
    }


def judge_own_node(body: Json, node: str, verdict: Verdict) -> None:
    """A bound pod's own node, judged as if the pod were not on it (`verdict`), first."""
    entries = body["nodes"]
    old = next((e for e in entries if e["node"] == node), None)
    if old is None:
        return
    entries.remove(old)
    body["summary"][old["verdict"]] -= 1
    entry: Json = {"node": node, "verdict": _verdict_of(verdict)}
    entry["reason"] = BOUND_HERE + (f": {verdict.reason}" if verdict.reason else "")
    if "notes" in old:
        entry["notes"] = old["notes"]
    body["summary"][entry["verdict"]] += 1
    entries.insert(0, entry)


def explanation(pod: PodView, assessments: list[Assessment], weights: Weights) -> Json:
    verdicts = Counter(_verdict(a) for a in assessments)
    return {
        "pod": f"{pod.namespace}/{pod.name}",
        "asks": _asks(pod),
        "weights": weights.as_dict(),
        "summary": {k: verdicts.get(k, 0) for k in ("pass", "fail", "unresolvable")},
        "nodes": [
            {
                "node": a.node,
                "verdict": _verdict(a),
                **({"reason": a.verdict.reason} if a.verdict.reason else {}),
                **({"scores": {k: round(v, 2) for k, v in a.scores.items()}} if a.scores else {}),
                **({"total": round(a.total, 2)} if a.total is not None else {}),
                **({"notes": list(a.notes)} if a.notes else {}),
            }
            for a in assessments
        ],
    }


def _verdict(a: Assessment) -> str:
    return _verdict_of(a.verdict)


def _verdict_of(verdict: Verdict) -> str:
    if verdict.ok:
        return "pass"
    return "fail" if verdict.resolvable else "unresolvable"


def _asks(pod: PodView) -> Json:
    asks: Json = {"gpus": pod.gpus, "rdma": dict(pod.rdma), "rails": pod.rails}
    if pod.link_layer:
        asks["linkLayer"] = pod.link_layer
    if pod.min_rate is not None:
        asks["minRateGbps"] = pod.min_rate
    if pod.min_affinity is not None:
        asks["minAffinity"] = pod.min_affinity.value
    if pod.require_gdr:
        asks["requireGdr"] = True
    if pod.problems:
        asks["problems"] = list(pod.problems)
    return asks


def table(body: Json) -> str:
    asks = body["asks"]
    rdma = ", ".join(f"{k}: {v}" for k, v in asks["rdma"].items()) or "none"
    lines = [
        *_bound_line(body.get("bound")),
        f"pod {body['pod']}: {asks['gpus']} GPUs, RDMA {rdma}, {asks['rails']} rails"
        + (f", {asks['linkLayer']}" if "linkLayer" in asks else "")
        + (f", min affinity {asks['minAffinity']}" if "minAffinity" in asks else "")
        + (f", min rate {asks['minRateGbps']:g} Gb/s" if "minRateGbps" in asks else "")
        + (", GPUDirect RDMA" if asks.get("requireGdr") else ""),
        *_gang_line(body.get("gang")),
        *_contention_lines(body.get("gang")),
        *_levels(body.get("gang") or {}),
        *(["nodes must have passed fabric acceptance"] if body.get("requireAcceptance") else []),
        "nodes: " + ", ".join(f"{v} {SHOWN[k]}" for k, v in body["summary"].items()),
        "",
    ]
    criteria = list(body["weights"])
    header = [
        "NODE",
        "VERDICT",
        "TOTAL",
        *(f"{c}(w{body['weights'][c]:g})" for c in criteria),
        "REASON",
    ]
    rows = [header]
    for node in body["nodes"]:
        scores = node.get("scores", {})
        rows.append(
            [
                node["node"],
                SHOWN[node["verdict"]],
                f"{node['total']:.2f}" if "total" in node else "-",
                *(f"{scores[c]:.2f}" if c in scores else "-" for c in criteria),
                node.get("reason", ""),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines + _notes(body["nodes"])) + "\n"


def _notes(nodes: list[Json]) -> list[str]:
    """The nodes' notes under the table, one line each."""
    found = [f"  {n['node']}: {note}" for n in nodes for note in n.get("notes", ())]
    return ["", "notes:", *found] if found else []


def _bound_line(bound: Json | None) -> list[str]:
    if not bound:
        return []
    at = bound["at"] or "an unknown time (the pod has no PodScheduled condition)"
    return [f"bound to {bound['node']} by {bound['scheduler']} at {at}"]


def _gang_line(gang: Json | None) -> list[str]:
    if not gang:
        return []
    if "singleton" in gang:
        reason = gang["singleton"]
        return [] if reason == "the pod names no gang" else [f"scheduled alone: {reason}"]
    plan = gang.get("plan")
    if plan:
        where = f"planned in {plan['domain']} on {len(plan['nodes'])} nodes"
    elif gang.get("whole"):
        where = gang["capacity"]
    else:
        where = f"no plan now: {gang['capacity']}"
    lines = [f"gang {gang['name']} of {gang['size']} ({gang['source']}): {where}"]
    if native := gang.get("native"):
        lines.append(native_line(native))
    return lines


def _levels(gang: Json) -> list[str]:
    """The levels in use, what the gang asks, and its plan's domain at every level."""
    levels = gang.get("levels")
    if not levels:
        return []
    used = ", ".join(levels["inUse"]) or "none"
    lines = [f"levels ({levels['source']}): {used}; asks: {levels['asks']}"]
    for level, values in (levels.get("domains") or {}).items():
        lines.append(f"  {level}: {', '.join(values)}")
    return lines


def _contention_lines(gang: Json | None) -> list[str]:
    """How long a gang without a plan has waited, and what is held or preempted for it."""
    lines = []
    waiting = (gang or {}).get("waiting")
    if waiting:
        lines.append(
            f"waiting {waiting['seconds']:g}s at priority {waiting['priority']}: "
            f"{waiting['reason'] or 'not decided yet'}"
        )
    hold = (gang or {}).get("hold")
    if hold:
        victims = f", preempting {', '.join(hold['victims'])}" if hold["victims"] else ""
        lines.append(
            f"holding {len(hold['nodes'])} nodes in {hold['domain']} ({hold['gpus']} GPUs){victims}"
        )
    return lines


def gang_summary(
    gang: Gang | Singleton,
    view: PodView,
    planner: Planner,
    contention: Contention,
    holds: HoldBook,
    bound_members: int | None = None,
) -> Json:
    """The gang's plan, or why it has none; `bound_members`: for a bound pod, how many of its
    gang's members are bound (a gang bound whole needs no room: it says so, not "needs 0 x")."""
    if isinstance(gang, Singleton):
        return {"singleton": gang.reason or "the pod names no gang"}
    summary: Json = {"name": str(gang), "size": gang.size, "source": gang.source}
    # A gang acts (plans, holds, preempts) only once its declared members exist: while some
    # are missing, explain says how many exist and why the gang waits.
    presence = planner.presence(gang)
    if (waiting_for := presence.refusal()) is not None:
        summary["members"] = presence.summary()
        summary["waitingFor"] = waiting_for
    if (native := native_summary(gang)) is not None:  # its scheduling.k8s.io group
        summary["native"] = native
    plan = planner.plans.get(gang.key)
    if plan is None and bound_members is not None and bound_members >= gang.size:
        summary["plan"] = None
        summary["whole"] = True
        summary["capacity"] = f"bound whole: {bound_members} of {gang.size} members bound"
    elif plan is None:
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


def explain_pod(core: Core, weights: Weights, pod: Json) -> Json:
    """Every node's verdict and scores for `pod`, and its gang's plan; for a bound pod, where it
    is, and its node judged without it."""
    view, gang = core.view(pod), core.gang(pod)
    engine = core.engine
    body = explanation(view, engine.explain(view, gang_key(gang)), weights)
    bound = bound_to(pod)
    members = core.bound_members(gang) if bound and isinstance(gang, Gang) else None
    body["gang"] = gang_summary(gang, view, core.planner, core.contention, core.holds, members)
    if engine.require_acceptance:
        body["requireAcceptance"] = True
    if core.holds:
        mark_held(body, core.holds, pod_priority(pod), gang_key(gang))
    if bound is not None:
        body["bound"] = bound
        node = core.cluster.node(bound["node"])
        if node is not None:
            without = core.freeing.without(node, [pod])
            judge_own_node(body, node.name, engine.verdict_on(view, without))
    return body
