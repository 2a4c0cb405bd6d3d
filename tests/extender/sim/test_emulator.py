"""The emulated kube-scheduler: kube-scheduler's arithmetic (sample size, rotating offset, node
order, backoff) as tables; exact extender bodies and failure handling against a recording stub
extender; backoff on an extender that is down; singletons and gangs bound through the real
extender in live mode against the fake apiserver; the partial-gang recorder driven by hand."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from extender.sim.emulator import (
    GPU,
    RDMA,
    Attempt,
    EmulatedScheduler,
    Job,
    ManualClock,
    NodeTree,
    SchedulerConfig,
    Workload,
    applied,
    backoff_duration,
    bound_node,
    num_feasible_nodes_to_find,
    scan,
)
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.clustergen import ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually

FAST = SchedulerConfig(backoff_initial=0.05, backoff_max=0.2)


def node(name: str, gpus: int = 8, labels: dict[str, str] | None = None) -> Json:
    allocatable = {"cpu": "96", "memory": "1Ti", "pods": "110", GPU: str(gpus), RDMA: str(gpus)}
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    gpus: int = 1,
    *,
    annotations: dict[str, str] | None = None,
    scheduler: str = "default-scheduler",
) -> Json:
    limits = {GPU: str(gpus), RDMA: "1"} if gpus else {"cpu": "1"}
    return {
        "metadata": {"name": name, "namespace": "team-a", "annotations": annotations or {}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "resources": {"limits": limits}}],
        },
        "status": {"phase": "Pending"},
    }


def summary(attempt: Attempt | None) -> tuple[str, str, str | None, int]:
    assert attempt is not None
    return attempt.pod[1], attempt.outcome, attempt.node, attempt.sampled


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


# --- kube-scheduler's arithmetic ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (50, None, 50),  # fewer than minFeasibleNodesToFind (100): every node
        (99, 10, 99),
        (100, None, 100),  # adaptive 50% = 50, raised to the 100 minimum
        (150, None, 100),  # 49% = 73
        (500, None, 230),  # 46%
        (1000, None, 420),  # 42%
        (5000, None, 500),  # 10%
        (10000, None, 500),  # 50 - 80 is below the 5% floor
        (5000, 0, 500),  # 0 is the adaptive default too
        (1000, 10, 100),
        (5000, 50, 2500),
        (5000, 100, 5000),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int | None, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


@pytest.mark.parametrize(
    ("attempts", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]
)
def test_backoff_doubles_up_to_the_cap(attempts: int, expected: float) -> None:
    assert backoff_duration(attempts, 1.0, 10.0) == expected


def test_scan_starts_at_the_offset_and_counts_what_it_processed() -> None:
    nodes = [f"n{i}" for i in range(10)]
    reason = "Insufficient nvidia.com/gpu"

    def check(name: str) -> str | None:
        return reason if name in ("n3", "n8") else None

    assert scan(nodes, 2, 3, check) == (["n2", "n4", "n5"], {"n3": reason}, 4)
    assert scan(nodes, 7, 3, check) == (["n7", "n9", "n0"], {"n8": reason}, 4)
    feasible, failed, processed = scan(nodes, 5, 20, check)
    assert (len(feasible), failed, processed) == (8, {"n3": reason, "n8": reason}, 10)


def test_node_tree_takes_zones_round_robin() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C")]:
        tree.upsert(name, zone)
    tree.upsert("c2", "C")
    assert tree.list() == ["a1", "b1", "c1", "a2", "c2", "a3"]
    tree.remove("b1")
    assert tree.list() == ["a1", "c1", "a2", "c2", "a3"]
    tree.upsert("a2", "C")
    assert tree.list() == ["a1", "c1", "a3", "c2", "a2"]


# --- against a recording stub extender ------------------------------------------------------------


class StubExtender:
    """Records every call; passes the nodes `passing` keeps, scores as `scores` says, binds
    through the fake apiserver unless `bind_error` is set (once `hold` is set, when given),
    answers `status[verb]` when set."""

    def __init__(self, api: FakeApiServer) -> None:
        self.api = api
        self.calls: list[tuple[str, Json]] = []
        self.passing: Callable[[list[str]], list[str]] = list
        self.scores: dict[str, int] = {}
        self.status: dict[str, int] = {}
        self.bind_error = ""
        self.delay = 0.0
        self.hold: asyncio.Event | None = None

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{verb}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        verb, body = request.match_info["verb"], orjson.loads(await request.read())
        self.calls.append((verb, body))
        await asyncio.sleep(self.delay)
        if verb in self.status:
            return web.Response(status=self.status[verb], text="no")
        if verb == "filter":
            answer: Any = {"NodeNames": self.passing(body["NodeNames"]), "Error": ""}
        elif verb == "prioritize":
            answer = [{"Host": n, "Score": self.scores.get(n, 0)} for n in body["NodeNames"]]
        else:
            if self.hold is not None:
                await self.hold.wait()
            answer = {"Error": self.bind_error}
            if not self.bind_error:
                binding = {"metadata": {"name": body["PodName"]}, "target": {"name": body["Node"]}}
                self.api.bind(body["PodNamespace"], binding)
        return web.json_response(answer)


@pytest.fixture
async def stub(fake_api: FakeApiServer) -> AsyncIterator[tuple[StubExtender, str]]:
    extender = StubExtender(fake_api)
    async with serving(extender.app()) as url:
        yield extender, url


NAMES = [f"node-{i:03d}" for i in range(150)]


async def test_filter_prioritize_bind_bodies_and_the_rotating_sample(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    for name in NAMES:
        fake_api.create("nodes", node(name))
    extender.scores = {"node-003": 9, "node-007": 10, "node-120": 10}
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        for name in ("w-2", "w-1", "w-3"):  # queued as they are created, whatever their names
            fake_api.create("pods", pod(name))
        await eventually(lambda: len(scheduler.queue) == 3)
        first = fake_api.get("pods", "w-2", "team-a")
        attempts = [await scheduler.step() for _ in range(3)]
        await eventually(lambda: len(scheduler.binds) == 3)
    # 150 nodes: 49% is 73, so 100 are sent, from where the previous cycle stopped.
    samples = [body["NodeNames"] for verb, body in extender.calls if verb == "filter"]
    assert samples == [NAMES[:100], NAMES[100:] + NAMES[:50], NAMES[50:]]
    assert extender.calls[0] == ("filter", {"Pod": first, "Nodes": None, "NodeNames": NAMES[:100]})
    assert extender.calls[1] == ("prioritize", extender.calls[0][1])
    # LeastAllocated: 87 for an empty node, 75 with one GPU taken; the extender adds score x 50.
    # w-2: node-007 587 > node-003 537. w-1: node-120 587 > node-007 575. w-3: node-120 575.
    assert [summary(a) for a in attempts] == [
        ("w-2", "assumed", "node-007", 100),
        ("w-1", "assumed", "node-120", 100),
        ("w-3", "assumed", "node-120", 100),
    ]
    binds = sorted((b for v, b in extender.calls if v == "bind"), key=lambda b: b["PodName"])
    assert binds[1] == {
        "PodName": "w-2",
        "PodNamespace": "team-a",
        "PodUID": first["metadata"]["uid"],
        "Node": "node-007",
    }
    assert [fake_api.get("pods", p, "team-a")["spec"]["nodeName"] for p in ("w-2", "w-1")] == [
        "node-007",
        "node-120",
    ]
    assert all(b.ok and b.via == "extender" for b in scheduler.binds)


async def test_a_node_the_extender_was_not_sent_fails_the_attempt(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.passing = lambda names: [*names, "n9"]
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: ("team-a", "w") in scheduler.queue)
        attempt = await scheduler.step()
        queued = scheduler.queue.get(("team-a", "w"))
    assert attempt is not None
    assert (attempt.outcome, attempt.message) == (
        "error",
        f'extender "{url}" claims a filtered node "n9" which is not found in the input node list',
    )
    assert queued is not None
    assert queued.backoff_until - queued.timestamp == pytest.approx(FAST.backoff_initial)
    assert extender.verbs() == ["filter"]


async def test_prioritize_is_skipped_for_one_node_and_its_errors_ignored(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    for name in ("n1", "n2", "n3"):
        fake_api.create("nodes", node(name))
    extender.passing = lambda names: names[-1:]
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        fake_api.create("pods", pod("w0"))
        await eventually(lambda: len(scheduler.queue) == 1)
        one = await scheduler.step()
        extender.passing = list
        extender.status["prioritize"] = 500
        fake_api.create("pods", pod("w1", gpus=8))
        await eventually(lambda: len(scheduler.queue) == 1)
        erred = await scheduler.step()
        await eventually(lambda: len(scheduler.binds) == 2)
    assert [summary(one), summary(erred)] == [
        ("w0", "assumed", "n3", 3),
        ("w1", "assumed", "n1", 2),
    ]
    assert extender.verbs()[:2] == ["filter", "bind"]
    assert extender.verbs()[2:4] == ["filter", "prioritize"]


async def test_a_pod_is_assumed_on_its_node_while_its_bind_is_held(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.hold = asyncio.Event()
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        for name in ("w0", "w1"):
            fake_api.create("pods", pod(name, gpus=8))
        await eventually(lambda: len(scheduler.queue) == 2)
        first = await scheduler.step()
        await eventually(lambda: "bind" in extender.verbs())
        second = await scheduler.step()  # while w0's bind is held, n1 counts as full
        extender.hold.set()
        await eventually(lambda: scheduler.binds)
    assert summary(first) == ("w0", "assumed", "n1", 1)
    assert second is not None
    assert (second.outcome, second.message) == (
        "unschedulable",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
    )
    assert extender.verbs() == ["filter", "bind"]


async def test_a_failed_bind_is_forgotten_and_backs_off(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.bind_error = "gang team-a/x timed out at the barrier"
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        fake_api.create("pods", pod("w", gpus=8))
        await eventually(lambda: len(scheduler.queue) == 1)
        attempt = await scheduler.step()
        assert scheduler.assumed == {("team-a", "w"): "n1"}
        assert scheduler.usage.of("n1") == {GPU: 8, RDMA: 1, "pods": 1}
        await eventually(lambda: scheduler.binds)
        queued = scheduler.queue.get(("team-a", "w"))
        assert (scheduler.assumed, scheduler.usage.of("n1")) == ({}, {GPU: 0, RDMA: 0, "pods": 0})
    assert summary(attempt) == ("w", "assumed", "n1", 1)
    assert [(b.via, b.error) for b in scheduler.binds] == [("extender", extender.bind_error)]
    assert queued is not None
    assert queued.backoff_until - queued.timestamp == pytest.approx(FAST.backoff_initial)
    assert fake_api.get("pods", "w", "team-a")["spec"].get("nodeName") is None


async def test_an_extender_timeout_fails_the_attempt(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.delay = 0.2
    config = SchedulerConfig(http_timeout=0.05, backoff_initial=0.05, backoff_max=0.2)
    async with EmulatedScheduler(fake_api, url, config) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: len(scheduler.queue) == 1)
        attempt = await scheduler.step()
    assert attempt is not None
    assert (attempt.outcome, attempt.message) == (
        "error",
        f"filter with extender at URL {url}/filter: TimeoutError",
    )


async def test_pods_without_managed_resources_skip_the_extender(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    async with EmulatedScheduler(fake_api, url, FAST) as scheduler:
        fake_api.create("pods", pod("cpu-only", gpus=0))
        await eventually(lambda: len(scheduler.queue) == 1)
        await scheduler.step()
        await eventually(lambda: scheduler.binds)
    assert extender.calls == []
    assert [(b.via, b.ok) for b in scheduler.binds] == [("apiserver", True)]
    assert fake_api.get("pods", "cpu-only", "team-a")["spec"]["nodeName"] == "n1"


async def test_plain_kube_scheduler_binds_through_the_apiserver(fake_api: FakeApiServer) -> None:
    for name in ("n1", "n2"):
        fake_api.create("nodes", node(name))
    config = SchedulerConfig(use_extender=False)
    async with EmulatedScheduler(fake_api, None, config) as scheduler:
        for name in ("w0", "w1", "w2"):
            fake_api.create("pods", pod(name, gpus=8))
        done = await scheduler.run_until(
            lambda: len(scheduler.binds) == 2 and len(scheduler.attempts) == 3, timeout=2.0
        )
    assert done
    assert [(b.pod[1], b.node, b.via, b.ok) for b in scheduler.binds] == [
        ("w0", "n1", "apiserver", True),
        ("w1", "n2", "apiserver", True),
    ]
    assert [(a.pod[1], a.outcome, a.message) for a in scheduler.attempts[2:]] == [
        ("w2", "unschedulable", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    ]
    bindings = [r.path for r in fake_api.requests if r.path.endswith("/binding")]
    assert bindings == [f"/api/v1/namespaces/team-a/pods/{p}/binding" for p in ("w0", "w1")]


async def test_the_informer_survives_an_ended_and_expired_watch(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("n1"))
    async with EmulatedScheduler(fake_api, None, SchedulerConfig(use_extender=False)) as scheduler:
        await eventually(lambda: fake_api.watching == 2)
        fake_api.end_watches()
        fake_api.create("pods", pod("w", gpus=8))
        fake_api.delete("nodes", "n1")
        fake_api.create("nodes", node("n2"))
        fake_api.compact()  # the re-watch from the last version seen gets 410: a re-list
        await eventually(lambda: ("team-a", "w") in scheduler.queue and "n2" in scheduler.nodes)
        assert await scheduler.run_until(lambda: bool(scheduler.binds), timeout=2.0)
    assert list(scheduler.nodes) == ["n2"]
    assert [(b.pod, b.node, b.ok) for b in scheduler.binds] == [(("team-a", "w"), "n2", True)]


async def test_a_crashed_watch_surfaces_from_step(
    fake_api: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with EmulatedScheduler(fake_api, None, SchedulerConfig(use_extender=False)) as scheduler:

        def broken(old: Json | None, new: Json | None) -> None:
            raise RuntimeError("a bug in the recorder")

        monkeypatch.setattr(scheduler.recorder, "pod_changed", broken)
        fake_api.create("pods", pod("w"))
        await eventually(lambda: scheduler.informer.crash() is not None)
        with pytest.raises(RuntimeError, match="a bug in the recorder"):
            await scheduler.step()


async def test_a_filter_that_fails_backs_the_pod_off_doubling(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("n1"))
    clock = ManualClock(100.0)
    url = f"http://127.0.0.1:{closed_port()}"
    async with EmulatedScheduler(fake_api, url, SchedulerConfig(), clock) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: len(scheduler.queue) == 1)
        waits = []
        for _ in range(6):
            attempt = await scheduler.step()
            assert attempt is not None
            assert attempt.outcome == "error"
            assert attempt.message.startswith(f"filter with extender at URL {url}/filter: ")
            queued = scheduler.queue.get(("team-a", "w"))
            assert queued is not None
            waits.append(queued.backoff_until - clock.now())
            clock.advance(waits[-1] - 0.01)
            assert await scheduler.step() is None  # still backing off
            clock.advance(0.01)
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


# --- with the real extender in live mode ----------------------------------------------------------


CLUSTER = ClusterSpec(nodes=32, nodes_per_leaf=16, busy_fraction=0.25, seed=3)


@pytest.fixture
async def extender_url(fake_api: FakeApiServer, core_v1: Any) -> AsyncIterator[str]:
    """The real extender app, watching `fake_api`, on a loopback port; the cluster loaded with
    its Nodes and the pods already running on them."""
    for obj in generate(CLUSTER):
        if obj["kind"] == "Node":
            fake_api.create("nodes", obj)
        elif bound_node(obj):
            fake_api.create("pods", obj)
    source = LiveSource(core_v1)
    async with serving(create_app(Settings(), source)) as url:
        await eventually(source.ready, within=5.0)
        yield url


def used_gpus(api: FakeApiServer) -> dict[str, int]:
    used: dict[str, int] = {}
    for obj in api.objects("pods"):
        if node_name := bound_node(obj):
            gpus = int(obj["spec"]["containers"][0]["resources"]["limits"][GPU])
            used[node_name] = used.get(node_name, 0) + gpus
    return used


async def test_singletons_bind_through_the_extender(
    fake_api: FakeApiServer, extender_url: str
) -> None:
    workload = Workload(
        seed=1, jobs=8, gang_fraction=0.0, mean_interarrival=0.01, duration=(0.2, 0.3)
    )
    before = {p["metadata"]["name"] for p in fake_api.objects("pods")}
    peak: dict[str, int] = {}
    async with EmulatedScheduler(fake_api, extender_url, FAST, workload=workload) as scheduler:

        def done() -> bool:
            for name, gpus in used_gpus(fake_api).items():
                peak[name] = max(peak.get(name, 0), gpus)
            return scheduler.workload_done()

        assert await scheduler.run_until(done, timeout=8.0)
    assert len(scheduler.binds) == 8
    assert all(b.ok and b.via == "extender" for b in scheduler.binds)
    by_extender = [r for r in fake_api.requests if r.path.endswith("/binding")]
    assert sorted(r.body["metadata"]["name"] for r in by_extender) == sorted(
        f"job-{i:04d}-00" for i in range(8)
    )
    assert {p["metadata"]["name"] for p in fake_api.objects("pods")} == before
    assert all(peak[n] <= scheduler.nodes[n].allocatable[GPU] for n in peak)
    assert scheduler.jobs is not None
    assert len(scheduler.jobs.finished) == 8


async def test_gangs_are_placed_and_recorded(fake_api: FakeApiServer, extender_url: str) -> None:
    workload = Workload(
        seed=2,
        jobs=4,
        gang_fraction=1.0,
        gang_sizes=((2, 1), (4, 1)),
        mean_interarrival=0.05,
        duration=(0.2, 0.3),
    )
    async with EmulatedScheduler(fake_api, extender_url, FAST, workload=workload) as scheduler:
        assert await scheduler.run_until(scheduler.workload_done, timeout=8.0)
    recorder = scheduler.recorder
    sizes = {(j.namespace, j.name): j.members for j in workload.stream()}
    assert {k: g.size for k, g in recorder.gangs.items()} == sizes
    assert set(recorder.time_to_place()) == set(sizes)
    for key, gang in recorder.gangs.items():
        assert len(gang.nodes) == sizes[key]
        assert gang.leaves <= {"leaf-000", "leaf-001"}
        assert len(gang.leaves) >= 1
    assert recorder.partial_gangs == 0
    assert all(b.ok for b in scheduler.binds)


# --- the recorder ---------------------------------------------------------------------------------


async def test_recorder_sees_a_partial_gang_and_its_gpu_seconds(fake_api: FakeApiServer) -> None:
    for i in range(4):
        fake_api.create("nodes", node(f"n{i}", labels={keys.LEAF: f"leaf-{i // 2:03d}"}))
    clock = ManualClock()
    gang = {keys.GANG: "llama", keys.GANG_SIZE: "4"}
    config = SchedulerConfig(use_extender=False, scheduler_name="not-us")
    async with EmulatedScheduler(fake_api, None, config, clock) as scheduler:
        recorder = scheduler.recorder
        for i in range(4):
            fake_api.create("pods", pod(f"m{i}", gpus=8, annotations=gang))
        fake_api.create("pods", pod("alone", gpus=8))
        for i in range(2):
            fake_api.bind("team-a", {"metadata": {"name": f"m{i}"}, "target": {"name": f"n{i}"}})
        fake_api.bind("team-a", {"metadata": {"name": "alone"}, "target": {"name": "n3"}})
        await eventually(lambda: GANG_KEY in recorder.gangs and recorder.gangs[GANG_KEY].bound == 2)
        assert (recorder.partial_gangs, recorder.max_partial) == (1, 1)
        assert recorder.partial_gpu_seconds() == 0.0
        clock.advance(2.0)
        assert recorder.partial_gpu_seconds() == 32.0  # 2 members x 8 GPUs x 2 s
        clock.advance(1.0)
        assert recorder.partial_gpu_seconds() == 48.0
        for i in (2, 3):
            fake_api.bind("team-a", {"metadata": {"name": f"m{i}"}, "target": {"name": f"n{i}"}})
        await eventually(lambda: recorder.partial_gangs == 0)
        clock.advance(5.0)
        assert recorder.partial_gpu_seconds() == 48.0
        fake_api.delete("pods", "m0", "team-a")  # a finished gang going away is not partial
        await eventually(lambda: len(recorder.gangs[GANG_KEY].members) == 3)
    placed = recorder.gangs[GANG_KEY]
    assert (recorder.partial_gangs, recorder.max_partial) == (0, 1)
    assert recorder.time_to_place() == {GANG_KEY: 3.0}
    assert placed.nodes == ("n0", "n1", "n2", "n3")
    assert placed.leaves == {"leaf-000", "leaf-001"}
    assert placed.spells == [(0.0, 3.0)]
    assert (recorder.max_partial_gangs(2.5), recorder.max_partial_gangs(3.0)) == (1, 0)
    assert list(recorder.gangs) == [GANG_KEY]


GANG_KEY = ("team-a", "llama")


# --- the workload ---------------------------------------------------------------------------------


def test_workload_is_a_deterministic_realistic_stream() -> None:
    jobs = Workload(seed=7, jobs=400).stream()
    assert jobs == Workload(seed=7, jobs=400).stream()
    assert jobs != Workload(seed=8, jobs=400).stream()
    arrivals = [j.arrival for j in jobs]
    assert arrivals == sorted(arrivals)
    assert 250 < arrivals[-1] < 550  # 400 arrivals 1 s apart on average
    gangs = [j for j in jobs if j.gang]
    singles = [j for j in jobs if not j.gang]
    assert 150 < len(gangs) < 250
    assert {j.gpus for j in gangs} == {8}
    assert {j.members for j in gangs} <= {2, 4, 8, 16, 32, 64}
    assert {j.gpus for j in singles} <= {1, 2, 4, 8}
    sizes = [j.members for j in gangs]
    assert sizes.count(2) > sizes.count(16) > sizes.count(64)
    assert all(10.0 <= j.duration <= 60.0 for j in jobs)


def test_a_gang_pod_carries_what_the_webhook_and_a_job_controller_put_there() -> None:
    job = Job("gang-0003", "team-llm", members=16, gpus=8, arrival=1.5, duration=30.0)
    pods = job.pods("kube-rdma-scheduler")
    assert [p["metadata"]["name"] for p in pods] == [f"gang-0003-{i:02d}" for i in range(16)]
    amounts = {"cpu": "128", "memory": "1024Gi", GPU: "8", RDMA: "1"}
    assert pods[5] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gang-0003-05",
            "namespace": "team-llm",
            "labels": {
                "batch.kubernetes.io/job-name": "gang-0003",
                "batch.kubernetes.io/job-completion-index": "5",
            },
            "annotations": {
                keys.APPLIED: applied("macvlan"),
                keys.GANG: "gang-0003",
                keys.GANG_SIZE: "16",
            },
        },
        "spec": {
            "schedulerName": "kube-rdma-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": amounts, "requests": amounts},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }
    assert orjson.loads(applied("macvlan"))["network"] == "macvlan"
    single = Job("job-0004", "team-llm", members=1, gpus=2, arrival=2.0, duration=5.0)
    assert keys.GANG not in single.pods()[0]["metadata"]["annotations"]
