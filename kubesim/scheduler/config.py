"""The parts of a KubeSchedulerConfiguration the emulator obeys, and kube-scheduler's arithmetic
on them.

numFeasibleNodesToFind follows pkg/scheduler/schedule_one.go: every node below 100, else the
percentage of the nodes (adaptive when unset), never fewer than 100, in Go's integer arithmetic.
The backoff follows calculateBackoffDuration (pkg/scheduler/backend/queue/scheduling_queue.go):
initial x 2^(attempts-1), capped at the maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesim.scheduler.pods import DEFAULT_SCHEDULER, GPU, RDMA

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50


@dataclass(frozen=True)
class SchedulerConfig:
    """One profile, one extender: what kube-scheduler's configuration says that the emulator
    reads."""

    scheduler_name: str = DEFAULT_SCHEDULER
    percentage_of_nodes_to_score: int | None = None
    """None (or 0): kube-scheduler's adaptive default, max(5, 50 - nodes/125) percent."""
    extender_weight: int = 5
    http_timeout: float = 5.0
    """Seconds per extender call (`httpTimeout`)."""
    node_cache_capable: bool = True
    managed_resources: tuple[str, ...] = (GPU, RDMA)
    """The extender is only called for pods requesting one of these; empty: for every pod."""
    bind_via_extender: bool = True
    preempt_via_extender: bool = False
    """The extender has a `preemptVerb`: kube-scheduler's preemption asks it (/preempt) which
    candidate nodes and victims to keep."""
    extender_ignorable: bool = False
    """`ignorable`: a failing /preempt is skipped, and a node it answers without victims
    dropped, instead of failing the preemption."""
    preemption: bool = True
    """False: DefaultPreemption disabled (no PostFilter), as a profile that turns it off."""
    backoff_initial: float = 1.0
    """Seconds (`podInitialBackoffSeconds`)."""
    backoff_max: float = 10.0
    """Seconds (`podMaxBackoffSeconds`)."""
    use_extender: bool = True
    """False: plain kube-scheduler, in-tree fit and the default binder only."""
    in_tree_time: float = 0.0
    """Seconds the in-tree plugins take in each scheduling cycle, at least: the cycle waits out
    what the emulator's own fit did not use (kube-scheduler runs in its own process, so this
    time does not hold up the extender)."""
    max_unschedulable: float | None = None
    """None: an unschedulable pod is retried after its backoff. Seconds: as kube-scheduler, it
    waits for a pod to be deleted or a Node to change, or this long at most
    (`podMaxInUnschedulablePodsDuration`, 300 s by default)."""
    idle_poll: float = 0.002
    """Seconds `run_until` waits when no pod is ready, before looking again."""
    gang_scheduling: bool = False
    """The GenericWorkload and GangScheduling feature gates (alpha in 1.35, off by default;
    GenericWorkload beta in 1.37, still off): the GangScheduling plugin's PreEnqueue and Permit
    for pods whose `spec.schedulingGroup` names a PodGroup with a gang policy."""
    pod_group_cycle: bool = False
    """With `gang_scheduling`: 1.36's PodGroup scheduling cycle (kube-scheduler runs it
    whenever GenericWorkload is on), the whole group placed from one snapshot. Off: pod by pod,
    the gang held at Permit, as 1.35 schedules it."""
    permit_timeout: float = 300.0
    """Seconds a gang's pod waits at Permit for minCount pods (`permitTimeoutDuration`)."""

    def __post_init__(self) -> None:
        problems = []
        percentage = self.percentage_of_nodes_to_score
        if percentage is not None and not 0 <= percentage <= 100:
            problems.append(f"percentage_of_nodes_to_score must be 0 to 100, got {percentage}")
        if self.extender_weight <= 0:
            problems.append(f"extender_weight must be positive, got {self.extender_weight}")
        if self.in_tree_time < 0:
            problems.append(f"in_tree_time must not be negative, got {self.in_tree_time}")
        if self.http_timeout <= 0:
            problems.append(f"http_timeout must be positive, got {self.http_timeout}")
        if not 0 < self.backoff_initial <= self.backoff_max:
            problems.append(
                f"need 0 < backoff_initial <= backoff_max, got {self.backoff_initial} and "
                f"{self.backoff_max}"
            )
        if self.pod_group_cycle and not self.gang_scheduling:
            problems.append("pod_group_cycle needs gang_scheduling (the GenericWorkload gate)")
        if self.permit_timeout <= 0:
            problems.append(f"permit_timeout must be positive, got {self.permit_timeout}")
        if problems:
            raise ValueError("invalid SchedulerConfig: " + "; ".join(problems))


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None = None) -> int:
    """How many feasible nodes the in-tree filters look for before they stop."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        adaptive = BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(adaptive, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """`initial` doubled for every attempt after the first, capped at `maximum`."""
    duration = initial
    for _ in range(1, attempts):
        if duration > maximum - duration:
            return maximum
        duration += duration
    return duration
