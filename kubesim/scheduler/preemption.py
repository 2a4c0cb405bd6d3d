"""kube-scheduler's DefaultPreemption, the decisions alone: who may preempt, which nodes are
candidates, which pods on a node are victims, and which candidate wins.

Each function follows one upstream function, named in its docstring (kubernetes
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and
pkg/scheduler/framework/preemption/preemption.go, 1.30 to 1.34). The API calls that carry a
decision out are kubesim/scheduler/preemptor.py's.

Where it simplifies, and a careful reader could tell: candidate nodes are dry-run one by one in
the order the scheduling cycle tried them (kube-scheduler starts at a random offset of its node
list and runs them in parallel); ties left
after every criterion go to the smallest node name (kube-scheduler takes the first of a map's
random order); a pod without `status.startTime` counts as started last (kube-scheduler takes
the time of the call, which is later than any recorded start).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kube_rdma.core.objects import Json
from kubesim.scheduler.disruption import split_by_violation

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
"""DefaultPreemptionArgs' defaults."""
NEVER = "Never"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NOT_STARTED = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Victims:
    """extenderv1.Victims: the pods to delete on one node and the budgets that breaks."""

    pods: tuple[Json, ...]
    pdb_violations: int


def priority(pod: Json) -> int:
    """corev1helpers.PodPriority: spec.priority, 0 when unset."""
    return int((pod.get("spec") or {}).get("priority") or 0)


def start_time(pod: Json) -> datetime:
    """util.GetPodStartTime: status.startTime, else later than any start."""
    text = (pod.get("status") or {}).get("startTime")
    if not isinstance(text, str):
        return NOT_STARTED
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return NOT_STARTED


def importance(pod: Json) -> tuple[int, datetime]:
    """Sort key for util.MoreImportantPod: higher priority first, then the earlier start."""
    return -priority(pod), start_time(pod)


def terminating_by_preemption(pod: Json) -> bool:
    """podTerminatingByPreemption: being deleted, with DisruptionTarget True for
    PreemptionByScheduler."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == DISRUPTION_TARGET:
            return bool(
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def not_eligible(
    pod: Json, nominated_unresolvable: bool, pods_on_nominated: Sequence[Json]
) -> str | None:
    """PodEligibleToPreemptOthers: why the pod may not preempt now, None when it may. A pod
    nominated to a node where a lower-priority victim is still terminating waits for it, unless
    this cycle found that node unresolvable."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == NEVER:
        return "not eligible due to preemptionPolicy=Never."
    nominated = (pod.get("status") or {}).get("nominatedNodeName")
    if nominated and not nominated_unresolvable:
        mine = priority(pod)
        if any(priority(p) < mine and terminating_by_preemption(p) for p in pods_on_nominated):
            return "not eligible due to a terminating pod on the nominated node."
    return None


def candidate_count(potential: int) -> int:
    """calculateNumCandidates: 10 % of the potential nodes, at least 100, at most all."""
    wanted = max(potential * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE)
    return min(wanted, potential)


Fits = Callable[[Sequence[Json]], "str | None"]
"""Why the preemptor fails the in-tree filters with these pods removed from the node; None
when it passes them."""


def select_victims(
    pod: Json, on_node: Sequence[Json], fits: Fits, pdbs: Sequence[Json]
) -> Victims | str:
    """SelectVictimsOnNode: remove every lower-priority pod; if the preemptor then fits, add
    them back most important first, PDB-violating ones before the others, keeping back each one
    without which it no longer fits. The victims, or why the node is no candidate."""
    mine = priority(pod)
    potential = sorted((p for p in on_node if priority(p) < mine), key=importance)
    if not potential:
        return "No preemption victims found for incoming pod"
    failure = fits(potential)
    if failure is not None:
        return failure
    violating, others = split_by_violation(potential, pdbs)
    removed = {id(p): p for p in potential}
    victims: list[Json] = []
    violations = 0
    for group, counts in ((violating, True), (others, False)):
        for candidate in group:
            del removed[id(candidate)]
            if fits(list(removed.values())) is not None:
                removed[id(candidate)] = candidate
                victims.append(candidate)
                violations += counts
    if violating and others:
        victims.sort(key=importance)
    return Victims(tuple(victims), violations)


def dry_run(
    potential_nodes: Sequence[str], select: Callable[[str], Victims | str]
) -> tuple[dict[str, Victims], dict[str, str], list[str]]:
    """DryRunPreemption: the candidates (those breaking no budget first), why the other nodes
    tried are none, and the errors among those (a node where the preemptor fits without
    removing anything); stops once enough candidates, one of them breaking no budget, are
    found."""
    wanted = candidate_count(len(potential_nodes))
    clean: dict[str, Victims] = {}
    violating: dict[str, Victims] = {}
    failures: dict[str, str] = {}
    errors: list[str] = []
    for node in potential_nodes:
        found = select(node)
        if isinstance(found, str) or not found.pods:
            failures[node] = (
                found
                if isinstance(found, str)
                else f'expected at least one victim pod on node "{node}"'
            )
            if not isinstance(found, str):
                errors.append(failures[node])
            continue
        (violating if found.pdb_violations else clean)[node] = found
        if clean and len(clean) + len(violating) >= wanted:
            break
    return {**clean, **violating}, failures, errors


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message alone, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def pick_node(candidates: Mapping[str, Victims]) -> str | None:
    """pickOneNodeForPreemption: fewest PDB violations, then the lowest highest-victim priority
    (the first victim's, as given), the smallest sum of priorities, the fewest victims, the
    latest start among the highest-priority victims."""
    remaining = sorted(candidates)
    for score in (_fewest_violations, _lowest_top, _smallest_sum, _fewest_pods, _latest_start):
        if len(remaining) <= 1:
            break
        scores = {node: score(candidates[node]) for node in remaining}
        best = max(scores.values())
        remaining = [node for node in remaining if scores[node] == best]
    return remaining[0] if remaining else None


def _fewest_violations(victims: Victims) -> float:
    return -victims.pdb_violations


def _lowest_top(victims: Victims) -> float:
    return -priority(victims.pods[0])


def _smallest_sum(victims: Victims) -> float:
    # kube-scheduler adds MaxInt32 + 1 to each priority so that negative priorities still add up
    return -sum(priority(p) + 2**31 for p in victims.pods)


def _fewest_pods(victims: Victims) -> float:
    return -len(victims.pods)


def _latest_start(victims: Victims) -> float:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(priority(p) for p in victims.pods)
    earliest = min(start_time(p) for p in victims.pods if priority(p) == top)
    return earliest.timestamp() if earliest != NOT_STARTED else float("inf")
