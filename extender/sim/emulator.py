"""An emulated kube-scheduler, a stream of training jobs, and a recorder of partial gangs.

The gang proof (issue 5) needs kube-scheduler's side of the extender protocol as kube-scheduler
really plays it, not as the extender would like it: one pod at a time from a queue with per-pod
backoff, the in-tree resource fit, only a sample of the feasible nodes sent to /filter, /prioritize
scores added as `score x weight x 10`, the pod *assumed* on its node while an asynchronous binding
cycle runs (so the next pods are scheduled while a bind is held), and a failed bind forgotten and
retried. `EmulatedScheduler` runs that loop against the HTTP-level fake apiserver
(tests/fakeapi.py) and a real extender over HTTP; `Workload` is what a Job controller would create
and delete; `Recorder` follows the apiserver's pods and measures partial gangs.

Where it follows kube-scheduler (pkg/scheduler/schedule_one.go unless noted):
- numFeasibleNodesToFind, and the in-tree filter pass that starts at `nextStartNodeIndex` and stops
  once enough feasible nodes are found, the index then moving by the nodes processed;
- the node order of the scheduler cache's nodeTree (backend/cache/node_tree.go): zones taken
  round-robin, nodes in the order they were added;
- the extender calls of pkg/scheduler/extender.go: interest via managedResources, NodeNames (or a
  NodeList), a returned name that was not sent fails the call, `Error` fails it, any HTTP error or
  timeout fails it; prioritize errors are ignored and prioritize is skipped when one node is left;
  /bind with PodName/PodNamespace/PodUID/Node; MaxNodeScore / MaxExtenderPriority = 10;
- the activeQ order of PrioritySort (priority, then the time the pod last entered the queue) and
  calculateBackoffDuration (backend/queue/scheduling_queue.go): initial x 2^(attempts-1), capped;
- a pod whose failed bind left it bound anyway is not queued again (handleSchedulingFailure).

Where it simplifies, and a careful reader could tell:
- in-tree filters are NodeResourcesFit (every requested resource, and the pod count when the node
  lists `pods`), NodeUnschedulable and TaintToleration; a Node whose Ready condition is not True
  is treated as tainted `node.kubernetes.io/not-ready:NoSchedule` (the node lifecycle controller
  does that); a Node without a Ready condition counts as ready;
- the in-tree score is LeastAllocated over GPUs alone (0-100, weight 1), where the default profile
  scores cpu and memory with several plugins: only how it compares to the extender's 0-500 matters;
- ties go to the smallest node name (kube-scheduler picks at random);
- an unschedulable pod waits out its backoff and is retried; kube-scheduler parks it until a cluster
  event, which on a busy cluster comes within the backoff anyway;
- no preemption, no nominated nodes, no PreFilter/Permit plugins.

The informer cache is the fake apiserver's own state: a list through its test-side API, then a
watch over HTTP from that resourceVersion. Re-reading `api.objects()` at every scheduling cycle
would be simpler but costs 20 ms for 512 Nodes and 340 ms for 5,000 (measured), while the watch
delivers every write, in order, once; the Recorder sees every intermediate state through it.

Time comes from a `Clock`. The extender's own timers (a gang barrier) run in real time, so next to
a real extender use `RealClock` with small backoffs; `ManualClock` is for tests of the queue and
the recorder on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import heapq
import itertools
import math
import random
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING
from typing import Any, Literal, Protocol

import aiohttp
import orjson

from extender.protocol import field as wire_field
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_quantity
from testbed.fakeapi import ApiError, FakeApiServer

PodKey = tuple[str, str]
"""(namespace, name)"""
GangKey = tuple[str, str]
"""(namespace, gang name)"""
Listener = Callable[[Json | None, Json | None], None]
"""Called with (old, new) for every change; old None when added, new None when deleted."""

GPU = "nvidia.com/gpu"
RDMA = "rdma/hca"
DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = frozenset({"Succeeded", "Failed"})
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
"""The scheduler's pod informer leaves finished pods out, as kube-scheduler's does."""

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50
MAX_NODE_SCORE = 100
MAX_EXTENDER_PRIORITY = 10
FIT_WEIGHT = 1
"""NodeResourcesFit's weight in the default profile."""
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
APISERVER_TIMEOUT = 30.0
WATCH_RETRY_SECONDS = 0.05


# --- time -----------------------------------------------------------------------------------------


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, monotonic."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class ManualClock:
    """Time that moves only when told to (or when slept on)."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds

    async def sleep(self, seconds: float) -> None:
        self.time += max(seconds, 0.0)
        await asyncio.sleep(0)


# --- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchedulerConfig:
    """The parts of a KubeSchedulerConfiguration (one profile, one extender) the emulator obeys."""

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
    backoff_initial: float = 1.0
    """Seconds (`podInitialBackoffSeconds`)."""
    backoff_max: float = 10.0
    """Seconds (`podMaxBackoffSeconds`)."""
    use_extender: bool = True
    """False: plain kube-scheduler, in-tree fit and the default binder only."""
    idle_poll: float = 0.002
    """Seconds `run_until` waits when no pod is ready, before looking again."""

    def __post_init__(self) -> None:
        problems = []
        percentage = self.percentage_of_nodes_to_score
        if percentage is not None and not 0 <= percentage <= 100:
            problems.append(f"percentage_of_nodes_to_score must be 0 to 100, got {percentage}")
        if self.extender_weight <= 0:
            problems.append(f"extender_weight must be positive, got {self.extender_weight}")
        if self.http_timeout <= 0:
            problems.append(f"http_timeout must be positive, got {self.http_timeout}")
        if not 0 < self.backoff_initial <= self.backoff_max:
            problems.append(
                f"need 0 < backoff_initial <= backoff_max, got {self.backoff_initial} and "
                f"{self.backoff_max}"
            )
        if problems:
            raise ValueError("invalid SchedulerConfig: " + "; ".join(problems))


# --- kube-scheduler's rules, as pure functions ----------------------------------------------------


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None = None) -> int:
    """How many feasible nodes the in-tree filters look for before they stop
    (numFeasibleNodesToFind): every node below 100, else the percentage (adaptive when unset)
    of the nodes, never fewer than 100. Integer arithmetic, as in Go."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        adaptive = BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(adaptive, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """calculateBackoffDuration: `initial` doubled for every attempt after the first, capped."""
    duration = initial
    for _ in range(1, attempts):
        if duration > maximum - duration:
            return maximum
        duration += duration
    return duration


def scan(
    nodes: Sequence[str], start: int, wanted: int, check: Callable[[str], str | None]
) -> tuple[list[str], dict[str, str], int]:
    """The in-tree filter pass of findNodesThatPassFilters, one node at a time: from `start`
    round the list until `wanted` nodes passed `check` (None = passed, else the reason). The
    passing nodes, the reasons of the others, and how many nodes were processed."""
    feasible: list[str] = []
    failed: dict[str, str] = {}
    for i in range(len(nodes)):
        if len(feasible) >= wanted:
            break
        name = nodes[(start + i) % len(nodes)]
        reason = check(name)
        if reason is None:
            feasible.append(name)
        else:
            failed[name] = reason
    return feasible, failed, len(feasible) + len(failed)


def zone_key(node: Json) -> str:
    """GetZoneKey (k8s.io/component-helpers/node/topology): region and zone, "" when neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get(
        "topology.kubernetes.io/zone", labels.get("failure-domain.beta.kubernetes.io/zone", "")
    )
    region = labels.get(
        "topology.kubernetes.io/region", labels.get("failure-domain.beta.kubernetes.io/region", "")
    )
    return f"{region}:\x00:{zone}" if region or zone else ""


class NodeTree:
    """The scheduler cache's node order: zones round-robin, each zone's nodes as added."""

    def __init__(self) -> None:
        self._zones: list[str] = []
        self._tree: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._list: list[str] | None = None

    def upsert(self, name: str, zone: str) -> None:
        if self._zone_of.get(name) == zone:
            return
        self.remove(name)
        if zone not in self._tree:
            self._zones.append(zone)
            self._tree[zone] = []
        self._tree[zone].append(name)
        self._zone_of[name] = zone
        self._list = None

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        self._tree[zone].remove(name)
        if not self._tree[zone]:
            del self._tree[zone]
            self._zones.remove(zone)
        self._list = None

    def list(self) -> list[str]:
        if self._list is None:
            columns = [self._tree[zone] for zone in self._zones]
            depth = max((len(c) for c in columns), default=0)
            self._list = [c[i] for i in range(depth) for c in columns if i < len(c)]
        return self._list


def quantity(resource: str, value: Any) -> int | None:
    """A quantity in the unit the scheduler counts it in (millicores for cpu, else whole units,
    rounded up); None when it is not a quantity."""
    try:
        amount = parse_quantity(value)
    except (QuantityError, TypeError):
        return None
    if resource == "cpu":
        amount *= 1000
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


def _amounts(resources: Mapping[str, Any] | None) -> dict[str, int]:
    result = {}
    for name, value in (resources or {}).items():
        amount = quantity(name, value)
        if amount:
            result[name] = amount
    return result


def pod_requests(pod: Json) -> dict[str, int]:
    """What the pod requests, as NodeResourcesFit counts it: the containers' sum, or an init
    container's amount when larger. A missing request is its limit (apiserver defaulting, which
    the fake apiserver does not do)."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        for name, amount in _amounts(
            {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        ).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        resources = container.get("resources") or {}
        for name, amount in _amounts(
            {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        ).items():
            total[name] = max(total.get(name, 0), amount)
    return total


@dataclass(frozen=True)
class NodeFacts:
    """A Node as the in-tree filters see it."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Json, ...]
    """The NoSchedule/NoExecute taints, with the ones spec.unschedulable and readiness imply."""


def node_facts(node: Json) -> NodeFacts:
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    status = node.get("status") or {}
    taints = [t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
    if spec.get("unschedulable"):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if ready and ready[0].get("status") != "True":
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
    return NodeFacts(
        name=str(meta.get("name")),
        labels=dict(meta.get("labels") or {}),
        allocatable=_amounts(status.get("allocatable")),
        taints=tuple(taints),
    )


def _tolerates(toleration: Json, taint: Json) -> bool:
    """ToleratesTaint (k8s.io/api/core/v1 toleration.go)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if (effect and effect != taint.get("effect")) or (key and key != taint.get("key")):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool((toleration.get("value") or "") == (taint.get("value") or ""))


def fit_failure(
    node: NodeFacts, used: Mapping[str, int], requests: Mapping[str, int], tolerations: list[Json]
) -> str | None:
    """Why the pod cannot go to the node (the reasons kube-scheduler prints), None if it can."""
    for taint in node.taints:
        if not any(_tolerates(t, taint) for t in tolerations):
            if taint.get("key") == UNSCHEDULABLE_TAINT:
                return "node(s) were unschedulable"
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    pods = node.allocatable.get("pods")
    if pods is not None and used.get("pods", 0) + 1 > pods:
        return "Too many pods"
    for name, amount in sorted(requests.items()):
        if node.allocatable.get(name, 0) - used.get(name, 0) < amount:
            return f"Insufficient {name}"
    return None


def fit_error(num_all_nodes: int, failed: Mapping[str, str]) -> str:
    """FitError's message: `0/N nodes are available: 3 Insufficient nvidia.com/gpu, ...`."""
    counts = Counter(failed.values())
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(reasons)}."


def gpu_score(node: NodeFacts, used: Mapping[str, int], requests: Mapping[str, int]) -> int:
    """leastRequestedScore on GPUs: the share left free once the pod is placed, 0-100."""
    capacity = node.allocatable.get(GPU, 0)
    requested = used.get(GPU, 0) + requests.get(GPU, 0)
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def pod_key(pod: Json) -> PodKey:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def bound_node(pod: Json) -> str | None:
    """The node the pod is bound to and holds resources on (finished pods hold none)."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in TERMINAL:
        return None
    return str(node)


# --- the informer cache ---------------------------------------------------------------------------


class Informer:
    """Nodes and non-terminal Pods, listed through the fake apiserver's test-side API, then
    watched over HTTP from that resourceVersion; re-listed after 410 Gone, re-watched when a
    stream ends. Listeners see every change in the apiserver's order."""

    def __init__(
        self,
        api: FakeApiServer,
        session: aiohttp.ClientSession,
        on_node: Listener,
        on_pod: Listener,
    ) -> None:
        self._api, self._session = api, session
        self._listeners = {"nodes": on_node, "pods": on_pod}
        self._stores: dict[str, dict[PodKey, Json]] = {"nodes": {}, "pods": {}}
        self._tasks: list[asyncio.Task[None]] = []

    def node(self, name: str) -> Json | None:
        return self._stores["nodes"].get(("", name))

    def pod(self, key: PodKey) -> Json | None:
        return self._stores["pods"].get(key)

    def pods(self) -> list[Json]:
        return list(self._stores["pods"].values())

    def start(self) -> None:
        for plural in ("nodes", "pods"):
            version = self._relist(plural)
            self._tasks.append(asyncio.create_task(self._watch(plural, version)))

    def crash(self) -> BaseException | None:
        """The exception a watch died of (a listener's bug), if one did."""
        for task in self._tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return task.exception()
        return None

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def _key(self, plural: str, obj: Json) -> PodKey:
        return pod_key(obj) if plural == "pods" else ("", str(obj["metadata"]["name"]))

    def _wanted(self, plural: str, obj: Json) -> bool:
        return plural == "nodes" or (obj.get("status") or {}).get("phase") not in TERMINAL

    def _relist(self, plural: str) -> str:
        items = [o for o in self._api.objects(plural) if self._wanted(plural, o)]
        version = str(self._api.version)
        fresh = {self._key(plural, o): o for o in items}
        store = self._stores[plural]
        for key in [k for k in store if k not in fresh]:
            self._apply(plural, "DELETED", store[key])
        for obj in items:
            self._apply(plural, "MODIFIED", obj)
        return version

    def _apply(self, plural: str, kind: str, obj: Json) -> None:
        store, key = self._stores[plural], self._key(plural, obj)
        old = store.get(key)
        if kind == "DELETED":
            if old is None:
                return
            del store[key]
            new: Json | None = None
        else:
            new = store[key] = obj
        self._listeners[plural](old, new)

    async def _watch(self, plural: str, version: str) -> None:
        url = f"{self._api.host}/api/v1/{plural}"
        unbounded = aiohttp.ClientTimeout(total=None, sock_read=None)
        while True:
            params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
            if plural == "pods":
                params["fieldSelector"] = NON_TERMINAL
            try:
                async with self._session.get(url, params=params, timeout=unbounded) as response:
                    if response.status == 200:
                        async for event in _events(response):
                            version = self._event(plural, event, version)
                    elif response.status == 410:
                        version = self._relist(plural)
            except (aiohttp.ClientError, OSError):
                pass
            await asyncio.sleep(WATCH_RETRY_SECONDS)

    def _event(self, plural: str, event: Json, version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            return self._relist(plural) if obj.get("code") == 410 else version
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._apply(plural, str(kind), obj)
        return str((obj.get("metadata") or {}).get("resourceVersion") or version)


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[Json]:
    """The JSON lines of a watch stream (read in chunks: a Node line can be long)."""
    buffer = b""
    async for chunk in response.content.iter_any():
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)


# --- what the apiserver holds, measured -----------------------------------------------------------


def gang_of(pod: Json) -> tuple[GangKey, int] | None:
    """The pod's gang and its size from kube-rdma's annotations; None for a pod alone."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    name, size = annotations.get(keys.GANG), str(annotations.get(keys.GANG_SIZE) or "")
    if not name or not size.isdigit() or int(size) < 2:
        return None
    return (str(meta.get("namespace") or "default"), str(name)), int(size)


@dataclass
class GangRecord:
    """One gang as the apiserver showed it over time."""

    key: GangKey
    size: int
    created: float
    """When its first member appeared."""
    members: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Pod name -> (GPUs, node it is bound to or None)."""
    placed: float | None = None
    """When all `size` members were first bound."""
    nodes: tuple[str, ...] = ()
    leaves: frozenset[str] = frozenset()
    spines: frozenset[str] = frozenset()
    spells: list[tuple[float, float | None]] = field(default_factory=list)
    """Partial spells: (start, end), end None while it lasts."""

    @property
    def bound(self) -> int:
        return sum(1 for _, node in self.members.values() if node)

    @property
    def partial(self) -> bool:
        """Some but not all members bound, before the gang was ever whole."""
        return self.placed is None and 0 < self.bound < self.size

    @property
    def held_gpus(self) -> int:
        """GPUs the gang's bound members hold while the gang is partial."""
        return sum(gpus for gpus, node in self.members.values() if node) if self.partial else 0


class Recorder:
    """Partial gangs at every change the apiserver shows: how many at once, GPU-seconds held by
    them, time from a gang's first member to its last bind, and the leaves a whole gang got."""

    def __init__(self, clock: Clock, labels: Callable[[str], Mapping[str, str]]) -> None:
        self._clock, self._labels = clock, labels
        self.gangs: dict[GangKey, GangRecord] = {}
        self.max_partial = 0
        """The most gangs partial at one instant."""
        self._partial = 0
        self._held = 0
        self._gpu_seconds = 0.0
        self._since = clock.now()

    @property
    def partial_gangs(self) -> int:
        """Gangs partial now."""
        return self._partial

    def partial_gpu_seconds(self) -> float:
        """GPUs held by bound members of partial gangs, integrated over time until now."""
        return self._gpu_seconds + self._held * (self._clock.now() - self._since)

    def time_to_place(self) -> dict[GangKey, float]:
        return {k: g.placed - g.created for k, g in self.gangs.items() if g.placed is not None}

    def max_partial_gangs(self, longer_than: float) -> int:
        """The most gangs at once in partial spells strictly longer than `longer_than` seconds
        (a gang whose binds are released together is partial for the instants between them)."""
        now, edges = self._clock.now(), []
        for gang in self.gangs.values():
            for start, end in gang.spells:
                stop = now if end is None else end
                if stop - start > longer_than:
                    edges += [(start, 1), (stop, -1)]
        most = current = 0
        for _, step in sorted(edges):  # at equal times ends (-1) come first
            current += step
            most = max(most, current)
        return most

    def pod_changed(self, old: Json | None, new: Json | None) -> None:
        obj = new if new is not None else old
        found = None if obj is None else gang_of(obj)
        if obj is None or found is None:
            return
        key, size = found
        now = self._clock.now()
        self._gpu_seconds += self._held * (now - self._since)
        self._since = now
        gang = self.gangs.get(key)
        if gang is None:
            gang = self.gangs[key] = GangRecord(key, size, now)
        was_partial, held = gang.partial, gang.held_gpus
        name = pod_key(obj)[1]
        if new is None:
            gang.members.pop(name, None)
        else:
            gang.members[name] = (pod_requests(new).get(GPU, 0), bound_node(new))
            gang.size = size
        if gang.placed is None and gang.bound >= gang.size:
            self._place(gang, now)
        self._held += gang.held_gpus - held
        if gang.partial != was_partial:
            self._partial += 1 if gang.partial else -1
            if gang.partial:
                gang.spells.append((now, None))
            else:
                gang.spells[-1] = (gang.spells[-1][0], now)
        self.max_partial = max(self.max_partial, self._partial)

    def _place(self, gang: GangRecord, now: float) -> None:
        gang.placed = now
        gang.nodes = tuple(sorted(node for _, node in gang.members.values() if node))
        labels = [self._labels(node) for node in gang.nodes]
        gang.leaves = frozenset(str(ls[keys.LEAF]) for ls in labels if keys.LEAF in ls)
        gang.spines = frozenset(str(ls[keys.SPINE]) for ls in labels if keys.SPINE in ls)


# --- the workload ---------------------------------------------------------------------------------


def applied(network: str) -> str:
    """The `kube-rdma.io/applied` record the webhook leaves (profile, its digest, network mode)."""
    profile = {"macvlan": "roce", "ib": "default"}.get(network, network)
    digest = hashlib.sha256(profile.encode()).hexdigest()[:12]
    return orjson.dumps({"profile": profile, "hash": digest, "network": network}).decode()


@dataclass(frozen=True)
class Job:
    """One training job: `members` pods of `gpus` GPUs each, a gang when more than one."""

    name: str
    namespace: str
    members: int
    gpus: int
    arrival: float
    """Seconds after the stream starts."""
    duration: float
    """Seconds it runs once all its pods are bound."""
    network: str = "macvlan"
    cpu_per_gpu: int = 16
    memory_per_gpu_gi: int = 128

    @property
    def gang(self) -> bool:
        return self.members > 1

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{index:02d}" for index in range(self.members)]

    def pods(self, scheduler_name: str = DEFAULT_SCHEDULER) -> list[Json]:
        return [
            self._pod(name, index, scheduler_name) for index, name in enumerate(self.pod_names())
        ]

    def _pod(self, name: str, index: int, scheduler_name: str) -> Json:
        annotations = {keys.APPLIED: applied(self.network)}
        if self.gang:
            annotations |= {keys.GANG: self.name, keys.GANG_SIZE: str(self.members)}
        amounts = {
            "cpu": str(self.cpu_per_gpu * self.gpus),
            "memory": f"{self.memory_per_gpu_gi * self.gpus}Gi",
            GPU: str(self.gpus),
            RDMA: "1",
        }
        container = {
            "name": "trainer",
            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "resources": {"limits": amounts, "requests": dict(amounts)},
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    "batch.kubernetes.io/job-name": self.name,
                    "batch.kubernetes.io/job-completion-index": str(index),
                },
                "annotations": annotations,
            },
            "spec": {
                "schedulerName": scheduler_name,
                "restartPolicy": "Never",
                "containers": [container],
            },
            "status": {"phase": "Pending"},
        }


@dataclass(frozen=True)
class Workload:
    """A deterministic stream of jobs: Poisson arrivals, gangs of 8-GPU pods with sizes from a
    mix where bigger gangs are rarer, and singletons of 1 to 8 GPUs."""

    seed: int = 0
    jobs: int = 100
    mean_interarrival: float = 1.0
    """Seconds between arrivals, on average (exponentially distributed)."""
    duration: tuple[float, float] = (10.0, 60.0)
    """Run time in seconds, uniform between the two."""
    gang_fraction: float = 0.5
    gang_sizes: tuple[tuple[int, float], ...] = (
        (2, 30),
        (4, 25),
        (8, 20),
        (16, 12),
        (32, 8),
        (64, 5),
    )
    """(members, weight)"""
    singleton_gpus: tuple[tuple[int, float], ...] = ((1, 25), (2, 20), (4, 20), (8, 35))
    """(GPUs, weight)"""
    namespaces: tuple[str, ...] = ("team-llm", "team-vision", "ml-research")
    network: str = "macvlan"
    """The webhook's network mode: macvlan for Ethernet (RoCE) clusters, ib for InfiniBand."""

    def stream(self) -> list[Job]:
        rng = random.Random(self.seed)
        sizes, size_weights = zip(*self.gang_sizes, strict=True)
        gpus, gpu_weights = zip(*self.singleton_gpus, strict=True)
        arrival, jobs = 0.0, []
        for index in range(self.jobs):
            arrival += rng.expovariate(1.0 / self.mean_interarrival)
            gang = rng.random() < self.gang_fraction
            members = rng.choices(sizes, size_weights)[0] if gang else 1
            per_pod = 8 if gang else rng.choices(gpus, gpu_weights)[0]
            name = f"{'gang' if gang else 'job'}-{index:04d}"
            jobs.append(
                Job(
                    name=name,
                    namespace=rng.choice(self.namespaces),
                    members=members,
                    gpus=per_pod,
                    arrival=arrival,
                    duration=rng.uniform(*self.duration),
                    network=self.network,
                )
            )
        return jobs


@dataclass
class JobState:
    job: Job
    bound: set[str] = field(default_factory=set)
    started: float | None = None
    """When its last pod was bound (it runs from then on)."""


class JobRunner:
    """Which jobs are due to be created, and which have run their time and are to be deleted."""

    def __init__(self, workload: Workload) -> None:
        self._arrivals = deque(sorted(workload.stream(), key=lambda j: j.arrival))
        self.total = len(self._arrivals)
        self.jobs: dict[tuple[str, str], JobState] = {}
        self.finished: list[JobState] = []
        self._by_pod: dict[PodKey, tuple[str, str]] = {}
        self._ends: list[tuple[float, str, str]] = []
        self._start: float | None = None

    @property
    def done(self) -> bool:
        return not self._arrivals and not self.jobs

    def begin(self, now: float) -> None:
        self._start = now

    def due(self, now: float) -> list[Job]:
        start = now if self._start is None else self._start
        found = []
        while self._arrivals and start + self._arrivals[0].arrival <= now:
            job = self._arrivals.popleft()
            self.jobs[(job.namespace, job.name)] = JobState(job)
            for name in job.pod_names():
                self._by_pod[(job.namespace, name)] = (job.namespace, job.name)
            found.append(job)
        return found

    def ended(self, now: float) -> list[Job]:
        found = []
        while self._ends and self._ends[0][0] <= now:
            _, namespace, name = heapq.heappop(self._ends)
            state = self.jobs.pop((namespace, name))
            self.finished.append(state)
            found.append(state.job)
        return found

    def next_event(self) -> float | None:
        times = [end for end, _, _ in self._ends[:1]]
        if self._arrivals and self._start is not None:
            times.append(self._start + self._arrivals[0].arrival)
        return min(times, default=None)

    def pod_changed(self, key: PodKey, pod: Json | None, now: float) -> None:
        state = self.jobs.get(self._by_pod.get(key, ("", "")))
        if state is None or pod is None or not bound_node(pod):
            return
        state.bound.add(key[1])
        if state.started is None and len(state.bound) == state.job.members:
            state.started = now
            end = (now + state.job.duration, state.job.namespace, state.job.name)
            heapq.heappush(self._ends, end)


# --- the scheduling queue -------------------------------------------------------------------------


@dataclass(eq=False)
class QueuedPod:
    key: PodKey
    priority: int
    timestamp: float
    """When it last entered the queue: PrioritySort's tie-breaker."""
    seq: int
    attempts: int = 0
    backoff_until: float = 0.0
    ticket: int = 0
    """Changes whenever the pod moves, so that heap entries it left behind are skipped."""


class SchedulingQueue:
    """kube-scheduler's activeQ and backoffQ: pods in PrioritySort order, and pods waiting out
    their backoff after a failed attempt."""

    def __init__(self, clock: Clock, initial: float, maximum: float) -> None:
        self._clock, self._initial, self._maximum = clock, initial, maximum
        self._pods: dict[PodKey, QueuedPod] = {}
        self._active: list[tuple[int, float, int, int, PodKey]] = []
        self._backoff: list[tuple[float, int, int, PodKey]] = []
        self._seq = itertools.count()
        self._tickets = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: PodKey) -> QueuedPod | None:
        return self._pods.get(key)

    def add(self, key: PodKey, priority: int = 0) -> None:
        """A new pending pod (nothing when it is queued already)."""
        if key not in self._pods:
            queued = QueuedPod(key, priority, self._clock.now(), next(self._seq))
            self._pods[key] = queued
            self._activate(queued)

    def remove(self, key: PodKey) -> None:
        self._pods.pop(key, None)

    def pop(self) -> QueuedPod | None:
        """The next pod to try, counted as an attempt; None when none is ready."""
        self._flush()
        while self._active:
            *_, ticket, key = heapq.heappop(self._active)
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                del self._pods[key]
                queued.attempts += 1
                return queued
        return None

    def back_off(self, queued: QueuedPod) -> None:
        """Back in the queue after a failed attempt, ready once its backoff has passed."""
        now = self._clock.now()
        queued.timestamp = now
        queued.backoff_until = now + backoff_duration(queued.attempts, self._initial, self._maximum)
        queued.ticket = next(self._tickets)
        self._pods[queued.key] = queued
        heapq.heappush(self._backoff, (queued.backoff_until, queued.seq, queued.ticket, queued.key))

    def next_ready(self) -> float | None:
        """When the next backing-off pod becomes ready."""
        while self._backoff:
            until, _, ticket, key = self._backoff[0]
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                return until
            heapq.heappop(self._backoff)
        return None

    def _activate(self, queued: QueuedPod) -> None:
        queued.ticket = next(self._tickets)
        entry = (-queued.priority, queued.timestamp, queued.seq, queued.ticket, queued.key)
        heapq.heappush(self._active, entry)

    def _flush(self) -> None:
        now = self._clock.now()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, ticket, key = heapq.heappop(self._backoff)
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                self._activate(queued)


# --- the scheduler --------------------------------------------------------------------------------


class ExtenderError(Exception):
    """An extender call that failed: HTTP error, timeout, bad body or a non-empty `Error`."""


class BindFailure(Exception):
    """The default binder's POST of a Binding was refused or went unanswered."""


class Unschedulable(Exception):
    """No node fits the pod."""


@dataclass(frozen=True)
class Attempt:
    """One scheduling cycle."""

    pod: PodKey
    at: float
    outcome: Literal["assumed", "unschedulable", "error", "gone"]
    node: str | None = None
    message: str = ""
    sampled: int = 0
    """Feasible nodes the in-tree pass found (what /filter was sent)."""


@dataclass(frozen=True)
class BindOutcome:
    """One binding cycle."""

    pod: PodKey
    node: str
    via: Literal["extender", "apiserver"]
    error: str
    started: float
    finished: float

    @property
    def ok(self) -> bool:
        return not self.error


class NodeUsage:
    """What the pods bound or assumed on each node request, pod count included."""

    def __init__(self) -> None:
        self._placed: dict[PodKey, tuple[str, dict[str, int]]] = {}
        self._used: dict[str, dict[str, int]] = {}

    def of(self, node: str) -> Mapping[str, int]:
        return self._used.get(node, {})

    def place(self, key: PodKey, node: str | None, requests: Mapping[str, int]) -> None:
        current = self._placed.pop(key, None)
        if current is not None:
            self._add(*current, sign=-1)
        if node is not None:
            placed = (node, {**requests, "pods": 1})
            self._placed[key] = placed
            self._add(*placed, sign=1)

    def _add(self, node: str, requests: Mapping[str, int], sign: int) -> None:
        used = self._used.setdefault(node, {})
        for name, amount in requests.items():
            used[name] = used.get(name, 0) + sign * amount


class EmulatedScheduler:
    """kube-scheduler with one profile and at most one HTTP extender, over the fake apiserver.

    Use as `async with`: it lists and watches the apiserver while open. `step()` runs one
    scheduling cycle (after creating the workload's due pods and deleting its finished ones);
    binding cycles run as tasks alongside, as kube-scheduler's binding goroutines do.
    """

    def __init__(
        self,
        api: FakeApiServer,
        extender_url: str | None,
        config: SchedulerConfig | None = None,
        clock: Clock | None = None,
        *,
        workload: Workload | None = None,
    ) -> None:
        self.api = api
        self.config = config or SchedulerConfig()
        self.clock: Clock = clock or RealClock()
        if self.config.use_extender and not extender_url:
            raise ValueError("use_extender needs an extender_url")
        self.extender_url = extender_url.rstrip("/") if extender_url else None
        if not self.config.use_extender:
            self.extender_url = None
        self.queue = SchedulingQueue(
            self.clock, self.config.backoff_initial, self.config.backoff_max
        )
        self.usage = NodeUsage()
        self.nodes: dict[str, NodeFacts] = {}
        self.assumed: dict[PodKey, str] = {}
        """Pods assumed on a node: from the end of their scheduling cycle until the informer
        shows them bound, or their bind failed."""
        self.attempts: list[Attempt] = []
        self.binds: list[BindOutcome] = []
        self.recorder = Recorder(self.clock, self._labels)
        self.jobs = JobRunner(workload) if workload is not None else None
        self._tree = NodeTree()
        self._in_flight: dict[PodKey, QueuedPod] = {}
        self._next_start = 0
        self._bindings: set[asyncio.Task[None]] = set()
        self._crashes: list[BaseException] = []
        self._session: aiohttp.ClientSession | None = None
        self._informer: Informer | None = None

    # Lifecycle

    async def __aenter__(self) -> EmulatedScheduler:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        # Go's HTTP client has no per-host connection cap; aiohttp's default of 100 would queue
        # the binds a gang barrier holds open.
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self._informer = Informer(self.api, self._session, self._node_changed, self._pod_changed)
        self._informer.start()
        if self.jobs is not None:
            self.jobs.begin(self.clock.now())

    async def close(self) -> None:
        for task in list(self._bindings):
            task.cancel()
        await asyncio.gather(*self._bindings, return_exceptions=True)
        if self._informer is not None:
            await self._informer.stop()
        if self._session is not None:
            await self._session.close()

    @property
    def informer(self) -> Informer:
        if self._informer is None:
            raise RuntimeError("the emulated scheduler is not started")
        return self._informer

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the emulated scheduler is not started")
        return self._session

    # Driving

    async def step(self) -> Attempt | None:
        """One scheduling cycle for the next ready pod; None when no pod is ready. Raises what
        a binding cycle or a watch crashed of: a bug in the emulator must not look like a stall."""
        await asyncio.sleep(0)  # let the watches and binding cycles run between cycles
        crash = self._crashes[0] if self._crashes else self.informer.crash()
        if crash is not None:
            raise crash
        if self.jobs is not None:
            self._run_jobs(self.clock.now())
        queued = self.queue.pop()
        if queued is None:
            return None
        attempt = await self._schedule(queued)
        self.attempts.append(attempt)
        return attempt

    async def run_until(
        self,
        predicate: Callable[[], bool],
        timeout: float,  # noqa: ASYNC109 - clock seconds (a ManualClock's), not the loop's
    ) -> bool:
        """Step until `predicate()` holds (True) or `timeout` seconds have passed (False)."""
        deadline = self.clock.now() + timeout
        while not predicate():
            now = self.clock.now()
            if now >= deadline:
                return False
            if await self.step() is None:
                await self.clock.sleep(min(self._idle(now), deadline - now))
        return True

    def workload_done(self) -> bool:
        """Every job of the workload was created, ran and was deleted."""
        return self.jobs is not None and self.jobs.done

    def _idle(self, now: float) -> float:
        wakes = [self.queue.next_ready()]
        if self.jobs is not None:
            wakes.append(self.jobs.next_event())
        soonest = min((w for w in wakes if w is not None), default=math.inf)
        return max(0.0, min(self.config.idle_poll, soonest - now))

    def _run_jobs(self, now: float) -> None:
        assert self.jobs is not None
        for job in self.jobs.due(now):
            for pod in job.pods(self.config.scheduler_name):
                self.api.create("pods", pod)
        for job in self.jobs.ended(now):
            for name in job.pod_names():
                with contextlib.suppress(ApiError):
                    self.api.delete("pods", name, job.namespace)

    # The informer's events

    def _labels(self, node: str) -> Mapping[str, str]:
        facts = self.nodes.get(node)
        return facts.labels if facts is not None else {}

    def _node_changed(self, old: Json | None, new: Json | None) -> None:
        if new is None:
            assert old is not None
            name = str(old["metadata"]["name"])
            self.nodes.pop(name, None)
            self._tree.remove(name)
            return
        facts = node_facts(new)
        self.nodes[facts.name] = facts
        self._tree.upsert(facts.name, zone_key(new))

    def _pod_changed(self, old: Json | None, new: Json | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        key = pod_key(obj)
        if new is None or bound_node(new):
            self.assumed.pop(key, None)  # bound (the assumption confirmed) or gone
        self._account(key)
        if new is not None and self._schedulable(new):
            if key not in self._in_flight and key not in self.assumed:
                self.queue.add(key, int((new.get("spec") or {}).get("priority") or 0))
        else:
            self.queue.remove(key)
        self.recorder.pod_changed(old, new)
        if self.jobs is not None:
            self.jobs.pod_changed(key, new, self.clock.now())

    def _schedulable(self, pod: Json) -> bool:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        return (
            (spec.get("schedulerName") or DEFAULT_SCHEDULER) == self.config.scheduler_name
            and not spec.get("nodeName")
            and (pod.get("status") or {}).get("phase") not in TERMINAL
            and not meta.get("deletionTimestamp")
        )

    def _account(self, key: PodKey) -> None:
        pod = self.informer.pod(key)
        node = None if pod is None else bound_node(pod) or self.assumed.get(key)
        self.usage.place(key, node, pod_requests(pod) if pod is not None else {})

    # The scheduling cycle

    async def _schedule(self, queued: QueuedPod) -> Attempt:
        key, now = queued.key, self.clock.now()
        pod = self.informer.pod(key)
        if pod is None or not self._schedulable(pod):
            return Attempt(key, now, "gone")
        self._in_flight[key] = queued
        try:
            node, sampled = await self._find_node(pod)
        except (Unschedulable, ExtenderError) as e:
            del self._in_flight[key]
            outcome: Literal["unschedulable", "error"] = (
                "unschedulable" if isinstance(e, Unschedulable) else "error"
            )
            self._requeue(queued)
            return Attempt(key, now, outcome, message=str(e))
        current = self.informer.pod(key)
        if current is None or not self._schedulable(current):
            del self._in_flight[key]
            return Attempt(key, now, "gone", node, "the pod changed during its scheduling cycle")
        # assume: the pod counts on its node from now on, while the bind runs in the background
        self.assumed[key] = node
        self._account(key)
        task = asyncio.create_task(self._bind(queued, current, node))
        self._bindings.add(task)
        task.add_done_callback(self._binding_done)
        return Attempt(key, now, "assumed", node, sampled=sampled)

    async def _find_node(self, pod: Json) -> tuple[str, int]:
        names = self._tree.list()
        if not names:
            raise Unschedulable("no nodes available to schedule pods")
        requests = pod_requests(pod)
        tolerations = list((pod.get("spec") or {}).get("tolerations") or [])

        def check(name: str) -> str | None:
            return fit_failure(self.nodes[name], self.usage.of(name), requests, tolerations)

        wanted = num_feasible_nodes_to_find(len(names), self.config.percentage_of_nodes_to_score)
        feasible, failed, processed = scan(names, self._next_start, wanted, check)
        self._next_start = (self._next_start + processed) % len(names)
        sampled = len(feasible)
        interested = self.extender_url is not None and self._interested(pod)
        if feasible and interested:
            feasible = await self._extender_filter(pod, feasible, failed)
        if not feasible:
            raise Unschedulable(fit_error(len(names), failed))
        if len(feasible) == 1:
            return feasible[0], sampled
        scores = {
            n: FIT_WEIGHT * gpu_score(self.nodes[n], self.usage.of(n), requests) for n in feasible
        }
        if interested:
            scale = self.config.extender_weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            for host, score in (await self._extender_prioritize(pod, feasible)).items():
                if host in scores:
                    scores[host] += score * scale
        return min(feasible, key=lambda n: (-scores[n], n)), sampled

    def _interested(self, pod: Json) -> bool:
        """IsInterested: a container or init container names a managed resource."""
        managed = set(self.config.managed_resources)
        if not managed:
            return True
        spec = pod.get("spec") or {}
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            resources = container.get("resources") or {}
            named = {*(resources.get("requests") or {}), *(resources.get("limits") or {})}
            if named & managed:
                return True
        return False

    def _requeue(self, queued: QueuedPod) -> None:
        """Back off, unless the pod is gone or bound meanwhile (a bind that timed out may have
        happened all the same)."""
        pod = self.informer.pod(queued.key)
        if pod is not None and self._schedulable(pod) and queued.key not in self.assumed:
            self.queue.back_off(queued)

    # The extender

    async def _post(self, verb: str, body: Json) -> Any:
        url = f"{self.extender_url}/{verb}"
        timeout = aiohttp.ClientTimeout(total=self.config.http_timeout)
        headers = {"Content-Type": "application/json"}
        try:
            async with self.session.post(
                url, data=orjson.dumps(body), headers=headers, timeout=timeout
            ) as response:
                data = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ExtenderError(f"{verb} with extender at URL {url}: {_describe(e)}") from None
        if response.status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ExtenderError(f"{verb} with extender at URL {url}: answer is not JSON") from None

    def _args(self, pod: Json, names: list[str]) -> Json:
        if self.config.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": names}
        items = [self.informer.node(n) for n in names]
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    async def _extender_filter(
        self, pod: Json, names: list[str], failed: dict[str, str]
    ) -> list[str]:
        result = await self._post("filter", self._args(pod, names))
        if not isinstance(result, dict):
            raise ExtenderError(f"filter with extender at URL {self.extender_url}: not an object")
        if error := wire_field(result, "Error"):
            raise ExtenderError(str(error))
        for key in ("FailedNodes", "FailedAndUnresolvableNodes"):
            failed.update({str(n): str(r) for n, r in (wire_field(result, key) or {}).items()})
        passed = wire_field(result, "NodeNames")
        if self.config.node_cache_capable and passed is not None:
            sent = set(names)
            for name in passed:
                if name not in sent:
                    raise ExtenderError(
                        f'extender "{self.extender_url}" claims a filtered node "{name}" which '
                        "is not found in the input node list"
                    )
            return [str(n) for n in passed]
        node_list = wire_field(result, "Nodes")
        if isinstance(node_list, dict):
            return [str(item["metadata"]["name"]) for item in node_list.get("items") or []]
        return []

    async def _extender_prioritize(self, pod: Json, names: list[str]) -> dict[str, int]:
        """Host -> score; an error gives no scores (kube-scheduler ignores prioritize errors)."""
        try:
            result = await self._post("prioritize", self._args(pod, names))
        except ExtenderError:
            return {}
        if not isinstance(result, list):
            return {}
        scores = {}
        for entry in result:
            if isinstance(entry, dict) and isinstance(wire_field(entry, "Score"), int):
                scores[str(wire_field(entry, "Host"))] = int(wire_field(entry, "Score"))
        return scores

    # The binding cycle

    def _binding_done(self, task: asyncio.Task[None]) -> None:
        self._bindings.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self._crashes.append(error)

    async def _bind(self, queued: QueuedPod, pod: Json, node: str) -> None:
        key, started = queued.key, self.clock.now()
        by_extender = self.extender_url is not None and self.config.bind_via_extender
        via: Literal["extender", "apiserver"] = (
            "extender" if by_extender and self._interested(pod) else "apiserver"
        )
        try:
            if via == "extender":
                await self._extender_bind(pod, node)
            else:
                await self._apiserver_bind(pod, node)
            error = ""
        except (ExtenderError, BindFailure) as e:
            error = str(e)
        self.binds.append(BindOutcome(key, node, via, error, started, self.clock.now()))
        self._in_flight.pop(key, None)
        current = self.informer.pod(key)
        if error or current is None or bound_node(current) is not None:
            self.assumed.pop(key, None)  # forgotten, or confirmed by the informer already
            self._account(key)
        if error:
            self._requeue(queued)

    async def _extender_bind(self, pod: Json, node: str) -> None:
        meta = pod.get("metadata") or {}
        body = {
            "PodName": meta.get("name"),
            "PodNamespace": meta.get("namespace") or "default",
            "PodUID": meta.get("uid") or "",
            "Node": node,
        }
        result = await self._post("bind", body)
        error = wire_field(result, "Error") if isinstance(result, dict) else "answer not an object"
        if error:
            raise ExtenderError(str(error))

    async def _apiserver_bind(self, pod: Json, node: str) -> None:
        namespace, name = pod_key(pod)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": pod["metadata"].get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        url = f"{self.api.host}/api/v1/namespaces/{namespace}/pods/{name}/binding"
        timeout = aiohttp.ClientTimeout(total=APISERVER_TIMEOUT)
        try:
            async with self.session.post(url, json=binding, timeout=timeout) as response:
                body = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise BindFailure(f"binding {namespace}/{name} to {node}: {_describe(e)}") from None
        if not 200 <= response.status < 300:
            message = _status_message(body)
            raise BindFailure(
                f"binding {namespace}/{name} to {node}: {message} ({response.status})"
            )


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _status_message(body: bytes) -> str:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode(errors="replace")
    return str(status.get("message", "")) if isinstance(status, dict) else ""
