"""Why kube-scheduler's candidates lack a planned node: a sample, or a node it ruled out.

kube-scheduler runs its filters only until it has found numFeasibleNodesToFind feasible nodes
(pkg/scheduler/schedule_one.go) and sends the extender those alone. A list of exactly that many
may be a sample that left the planned node out by chance; the node may be in the next one. A
shorter list holds every node that passed kube-scheduler's filters, so a planned node missing
from it was ruled out for a reason the extender cannot see (a plugin it does not emulate, pod
affinity, volumes, ports): waiting for it is pointless. This assumes the extender is the first
filtering extender, so that no other has thinned the list before. Pure: no I/O.
"""

from __future__ import annotations

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """schedule_one.go, numFeasibleNodesToFind: every node below 100, else the percentage
    (0: adaptive, 50 - nodes/125 but at least 5) of them, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        adaptive = BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(adaptive, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def sampled(candidates: int, num_all_nodes: int, percentage: int) -> bool:
    """Whether a list of `candidates` nodes may have been cut short by kube-scheduler's search."""
    wanted = num_feasible_nodes_to_find(num_all_nodes, percentage)
    return wanted < num_all_nodes and candidates >= wanted


def sampled_reason(gang: str, node: str, candidates: int) -> str:
    return (
        f"gang {gang}: planned node {node} was not among the {candidates} candidates "
        "kube-scheduler sent (set percentageOfNodesToScore: 100 for the RDMA scheduler)"
    )


def ruled_out_reason(gang: str, node: str, candidates: int) -> str:
    return (
        f"gang {gang}: kube-scheduler ruled out planned node {node}: its {candidates} candidates "
        "are every node that passed its filters, so a check the extender cannot see refused it "
        f"(another plugin, pod affinity, volumes, ports); the gang is planned again without {node}"
    )


def nominating_reason(gang: str, node: str) -> str:
    return (
        f"gang {gang}: this member is being nominated to its planned node {node}; "
        "kube-scheduler tries that node first once the nomination is written"
    )


def moved_reason(gang: str, nominated: str, node: str) -> str:
    return (
        f"gang {gang}: this member is nominated to {nominated}, but its plan holds {node} "
        "for it (kube-scheduler's search follows in the same cycle)"
    )
