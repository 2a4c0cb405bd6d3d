"""kube-scheduler's GangScheduling plugin (1.36 and later), and the PodGroup state it reads.

A pod belongs to a group when its `spec.schedulingGroup.podGroupName` names a PodGroup
(scheduling.k8s.io/v1alpha2 in 1.36; v1beta1 and v1alpha3 in 1.37), or, in 1.35, when its
`spec.workloadRef` names a Workload's `spec.podGroups[]` entry (one group per replica key).
Only a group whose gang policy is set is a gang; a `basic` policy schedules its pods alone.
Following pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go:

- **PreEnqueue**: a gang's pod enters the scheduling queue only once its PodGroup exists and the
  group has at least `minCount` pods (any state: unscheduled, assumed, bound); until then it is
  held (`UnschedulableAndUnresolvable`: "waiting for minCount pods from a gang to appear in
  scheduling queue"). A pod added to the group, or the PodGroup added, lets the held pods in.
- **Permit**: an assumed pod of a gang waits until `minCount` pods of its group are assumed or
  bound, at most `permitTimeoutDuration` (5 minutes); the pod that completes the count allows
  every waiting one; one that times out is rejected (unreserved and sent back to the queue). A
  pod that starts to wait activates the group's unscheduled pods.

A PodGroup under a CompositePodGroup (1.37, `spec.parentCompositePodGroupName`) whose gang
policy binds its children is scheduled with its siblings as one unit, as kube-scheduler's
workload forest schedules a hierarchy from its root: the unit is the highest CompositePodGroup
above it with the gang policy (and every one between), its pods those of every PodGroup under
it, its minCount theirs summed. A PodGroup naming a CompositePodGroup not seen yet waits for it.

The PodGroup scheduling cycle that places a whole group from one snapshot is
kubesim/scheduler/podgroupcycle.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Final

from kube_rdma.core.objects import Json
from kubesim.scheduler.clock import Clock
from kubesim.scheduler.pods import TERMINAL, PodKey

GroupKey = tuple[str, str]
"""(namespace, PodGroup name), or (namespace, `CompositePodGroup/<name>`) for a composite unit."""
COMPOSITE: Final = "CompositePodGroup"
MAX_TREE_DEPTH: Final = 4
"""WorkloadMaxTreeDepth (scheduling/v1alpha3 types.go)."""
PERMIT_TIMEOUT: Final = 300.0
"""permitTimeoutDuration: seconds a gang's pod waits at Permit for its quorum."""
WAITING_FOR_GROUP: Final = 'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
"""1.36's wording ("pods's"; 1.37 says "pod's")."""
WAITING_FOR_MIN_COUNT: Final = "waiting for minCount pods from a gang to appear in scheduling queue"
PLUGIN: Final = "GangScheduling"


def pod_group_name(pod: Json) -> str | None:
    """`spec.schedulingGroup.podGroupName`; 1.35's `spec.workloadRef` as
    `workload/podGroup[/replicaKey]`; or None."""
    spec = pod.get("spec") or {}
    name = (spec.get("schedulingGroup") or {}).get("podGroupName")
    if name:
        return str(name)
    ref = spec.get("workloadRef") or {}
    if not (ref.get("name") and ref.get("podGroup")):
        return None
    replica = [str(ref["podGroupReplicaKey"])] if ref.get("podGroupReplicaKey") else []
    return "/".join([str(ref["name"]), str(ref["podGroup"]), *replica])


def parent_name(group: Json) -> str | None:
    """`spec.parentCompositePodGroupName`, or None."""
    name = (group.get("spec") or {}).get("parentCompositePodGroupName")
    return str(name) if name else None


def min_count(pod_group: Json) -> int | None:
    """The gang policy's minCount; None for a `basic` policy (no gang)."""
    policy = (pod_group.get("spec") or {}).get("schedulingPolicy") or {}
    gang = policy.get("gang")
    return None if gang is None else int(gang.get("minCount") or 1)


class GangScheduling:
    """The plugin and the PodGroup states: which pods each group has, and which of its pods
    PreEnqueue holds and Permit keeps waiting. `scheduled(key)` tells whether a pod is assumed
    or bound (the scheduler's cache knows)."""

    def __init__(
        self, clock: Clock, scheduled: Callable[[PodKey], bool], timeout: float = PERMIT_TIMEOUT
    ) -> None:
        self._clock, self._scheduled, self.timeout = clock, scheduled, timeout
        self._min: dict[GroupKey, int | None] = {}
        """The PodGroups the scheduler knows, and their minCount (None: basic)."""
        self._parents: dict[GroupKey, str] = {}
        """The CompositePodGroup each PodGroup or CompositePodGroup names as its parent."""
        self._composites: dict[GroupKey, bool] = {}
        """The CompositePodGroups known, and whether their policy is gang."""
        self._pods: dict[GroupKey, set[PodKey]] = {}
        self._held: dict[GroupKey, set[PodKey]] = {}
        self._waiting: dict[GroupKey, dict[PodKey, asyncio.Event]] = {}

    def group_of(self, pod: Json) -> GroupKey | None:
        """The unit the pod is scheduled with: its PodGroup, or the CompositePodGroup above."""
        leaf = self._leaf_of(pod)
        return None if leaf is None else self._unit(leaf)

    def _leaf_of(self, pod: Json) -> GroupKey | None:
        name = pod_group_name(pod)
        return None if name is None else (str(pod["metadata"].get("namespace")), name)

    def _unit(self, leaf: GroupKey) -> GroupKey:
        unit, at = leaf, leaf
        for _ in range(MAX_TREE_DEPTH - 1):
            parent = self._parents.get(at)
            if parent is None:
                break
            at = (leaf[0], f"{COMPOSITE}/{parent}")
            if not self._composites.get(at):
                break
            unit = at
        return unit

    def _leaves(self, unit: GroupKey) -> list[GroupKey]:
        if not unit[1].startswith(f"{COMPOSITE}/"):
            return [unit]
        return [g for g in self._min if g[0] == unit[0] and self._unit(g) == unit]

    def _known(self, leaf: GroupKey) -> GroupKey | None:
        """The key its minCount is kept under: a 1.35 group instance's is its podGroup's."""
        template = (leaf[0], "/".join(leaf[1].split("/")[:2]))
        return next((k for k in (leaf, template) if k in self._min), None)

    def min_count(self, group: GroupKey) -> int | None:
        if not group[1].startswith(f"{COMPOSITE}/"):
            known = self._known(group)
            return None if known is None else self._min[known]
        return sum(self._min.get(g) or 0 for g in self._leaves(group))

    def members(self, group: GroupKey) -> set[PodKey]:
        """The group's pods that exist (AllPodsCount counts them)."""
        if not group[1].startswith(f"{COMPOSITE}/"):
            return self._pods.get(group, set())
        return {k for g in self._leaves(group) for k in self._pods.get(g, set())}

    def unscheduled(self, group: GroupKey) -> list[PodKey]:
        return sorted(k for k in self.members(group) if not self._scheduled(k))

    def scheduled_count(self, group: GroupKey) -> int:
        return sum(1 for k in self.members(group) if self._scheduled(k))

    # The informer's events

    def pod_group_changed(self, old: Json | None, new: Json | None) -> list[PodKey]:
        """A PodGroup added, updated or deleted; the held pods it lets in."""
        obj = new if new is not None else old
        assert obj is not None
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        composite = obj.get("kind") == COMPOSITE
        group = (str(meta.get("namespace")), f"{COMPOSITE}/{name}" if composite else name)
        if new is None:
            self._min.pop(group, None)
            self._composites.pop(group, None)
            self._parents.pop(group, None)
            return []
        if obj.get("kind") == "Workload":
            for entry in (new.get("spec") or {}).get("podGroups") or []:
                template = (group[0], f"{name}/{entry.get('name')}")
                self._min[template] = min_count({"spec": {"schedulingPolicy": entry.get("policy")}})
        elif composite:
            policy = (new.get("spec") or {}).get("schedulingPolicy") or {}
            self._composites[group] = policy.get("gang") is not None
        else:
            self._min[group] = min_count(new)
        if (parent := parent_name(new)) is not None:
            self._parents[group] = parent
        return [k for unit in list(self._held) for k in self._release(unit)]

    def pod_changed(self, key: PodKey, old: Json | None, new: Json | None) -> list[PodKey]:
        """A pod added, updated or deleted; the held pods of its group it lets in."""
        obj = new if new is not None else old
        assert obj is not None
        leaf = self._leaf_of(obj)
        if leaf is None:
            return []
        group = self._unit(leaf)
        alive = new is not None and (
            (new.get("status") or {}).get("phase") not in TERMINAL
            and not (new.get("metadata") or {}).get("deletionTimestamp")
        )
        if alive:
            self._pods.setdefault(leaf, set()).add(key)
        else:
            self._pods.get(leaf, set()).discard(key)
            self._held.get(group, set()).discard(key)
        return self._release(group) if alive and old is None else []

    # PreEnqueue

    def pre_enqueue(self, key: PodKey, pod: Json) -> str | None:
        """Why the pod may not enter the queue yet (it is held until `_release`), or None."""
        group = self.group_of(pod)
        if group is None:
            return None
        reason = self._not_ready(group)
        if reason is not None:
            self._held.setdefault(group, set()).add(key)
        return reason

    def held(self) -> set[PodKey]:
        return {k for keys in self._held.values() for k in keys}

    def _not_ready(self, group: GroupKey) -> str | None:
        for leaf in self._leaves(group):
            if self._known(leaf) is None:
                return WAITING_FOR_GROUP.format(name=leaf[1])
            parent = self._parents.get(leaf)
            if parent is not None and (leaf[0], f"{COMPOSITE}/{parent}") not in self._composites:
                return WAITING_FOR_GROUP.format(name=parent)
        wanted = self.min_count(group)
        if wanted is not None and len(self.members(group)) < wanted:
            return WAITING_FOR_MIN_COUNT
        return None

    def _release(self, group: GroupKey) -> list[PodKey]:
        if not self._held.get(group) or self._not_ready(group) is not None:
            return []
        return sorted(self._held.pop(group))

    # Permit

    async def permit(
        self, key: PodKey, pod: Json, activate: Callable[[Iterable[PodKey]], None]
    ) -> str | None:
        """Wait until the pod's gang has minCount pods assumed or bound: None when it may bind,
        the rejection when it timed out."""
        group = self.group_of(pod)
        wanted = None if group is None else self.min_count(group)
        if group is None or wanted is None:
            return None
        if self.scheduled_count(group) >= wanted:
            for event in self._waiting.get(group, {}).values():
                event.set()
            return None
        activate(self.unscheduled(group))
        event = asyncio.Event()
        waiting = self._waiting.setdefault(group, {})
        waiting[key] = event
        deadline = self._clock.now() + self.timeout
        try:
            while not event.is_set() and (left := deadline - self._clock.now()) > 0:
                await self._clock.wait(event, left)
        finally:
            waiting.pop(key, None)
        if event.is_set():
            return None
        return f"rejected due to timeout after waiting {_duration(self.timeout)} at plugin {PLUGIN}"

    def waiting(self) -> int:
        """Pods waiting at Permit now."""
        return sum(len(w) for w in self._waiting.values())


def _duration(seconds: float) -> str:
    """As Go prints a time.Duration of whole seconds: 5m0s, 30s."""
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"
