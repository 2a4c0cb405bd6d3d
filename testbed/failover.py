"""Kill the serving scheduler mid-gang, again and again, and check that nothing goes wrong.

Everything runs as real processes, as in a cluster: the fake apiserver (`python -m
testbed.fakeapi`), and two "scheduler pods", each an emulated kube-scheduler (`python -m
kubesim.scheduler`, leader election on a Lease) with the real extender beside it on 127.0.0.1
(`kube-rdma extender`). A contended stream of gangs (more than the cluster holds at once; a
gang whole runs for a while and is then deleted) is placed while the harness SIGKILLs the whole
pod that holds the Lease at random moments, waits until the other pod has taken the Lease
over, and starts the killed pod again (the kubelet's restart), which becomes the standby.

Watching every pod through the apiserver (`testbed/observer.py`), it records what must never
happen: a pod bound to a second node, a node given more GPUs than it has, a gang partly bound
that never became whole, during the run and at its end; and the takeover time of each kill
(until the other pod holds the Lease, and until the next bind, or that none came).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kubernetes_asyncio import client

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import NotFound
from kube_rdma.kube.lease import LeaseTiming
from kube_rdma.kube.reflector import Reflector
from testbed.builders import nodes
from testbed.clustergen import write_snapshot
from testbed.observer import Findings, Observer
from testbed.wait import eventually

GPUS_PER_NODE = 8
LEASE = ("kube-rdma", "rdma-scheduler")
POLL_SECONDS = 0.02
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class FailoverRun:
    nodes: int = 8
    leaf_size: int = 4
    gangs: int = 10
    """Gangs created at once; a new batch when they are all done before the last kill."""
    sizes: tuple[int, ...] = (2, 3, 4)
    """Members per gang (one node each), drawn at random."""
    kills: int = 3
    hold: float = 1.0
    """Seconds a gang runs once bound whole, before its pods are deleted."""
    timing: LeaseTiming = field(default_factory=lambda: LeaseTiming(2.0, 1.5, 0.5))
    barrier_timeout: float = 1.0
    http_timeout: float = 2.5
    seed: int = 0
    deadline: float = 100.0
    apiserver_flags: tuple[str, ...] = ()
    extender_flags: tuple[str, ...] = ()
    scheduler_flags: tuple[str, ...] = ()


@dataclass
class Report(Findings):
    gangs: dict[str, int] = field(default_factory=dict)
    """Every gang created, and its size: `run.gangs` at first, as many more while kills are
    still to come."""
    takeovers: list[float] = field(default_factory=list)
    """Seconds from each kill until the other pod held the Lease."""
    first_binds: list[float] = field(default_factory=list)
    """Seconds from each kill until the next pod was bound."""
    no_bind_after: list[int] = field(default_factory=list)
    """The kills (counted from 1) after which no pod was bound within 30 s."""
    partly_bound: list[str] = field(default_factory=list)
    """Gangs partly bound when the run ended."""
    plans_at_kills: list[int] = field(default_factory=list)
    """Gang plans recorded (gangs being placed) at each kill."""
    elapsed: float = 0.0


class Replica:
    """One scheduler pod: an emulated kube-scheduler and its extender sidecar."""

    def __init__(self, name: str, run: FailoverRun, apiserver: str, kubeconfig: Path, logs: Path):
        self.name, self._run, self._apiserver, self._kubeconfig = name, run, apiserver, kubeconfig
        self._logs, self.generation, self.identity = logs, 0, ""
        self._processes: list[subprocess.Popen[bytes]] = []

    async def start(self) -> None:
        """The extender on a port it picks, then the scheduler pointed at it."""
        self.generation += 1
        self.identity = f"{self.name}-{self.generation}"
        timing = self._run.timing
        log = self._spawn(
            "kube_rdma_cli",
            "extender",
            f"--kubeconfig={self._kubeconfig}",
            "--host=127.0.0.1",
            "--port=0",
            f"--barrier-timeout={self._run.barrier_timeout}",
            "--plan-namespace=kube-rdma",
            # The emulated scheduler's profile: the extender binds only that scheduler's pods.
            "--scheduler-name=default-scheduler",
            *self._run.extender_flags,
        )
        extender = await _listening(log, self._processes[-1])
        self._spawn(
            "kubesim.scheduler",
            f"--apiserver={self._apiserver}",
            f"--extender={extender}",
            f"--identity={self.identity}",
            f"--lease={'/'.join(LEASE)}",
            f"--lease-duration={timing.duration}",
            f"--renew-deadline={timing.renew_deadline}",
            f"--retry-period={timing.retry_period}",
            f"--http-timeout={self._run.http_timeout}",
            "--backoff-initial=0.2",
            "--backoff-max=1",
            *self._run.scheduler_flags,
        )

    def _spawn(self, module: str, *args: str) -> Path:
        path = self._logs / f"{self.identity}-{module}.log"
        log: IO[bytes] = path.open("wb")
        command = [sys.executable, "-m", module, *args]
        self._processes.append(
            subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        )
        return path

    def kill(self) -> None:
        """SIGKILL: no shutdown, no released Lease, binds cut wherever they are."""
        for process in self._processes:
            process.kill()
        for process in self._processes:
            process.wait()
        self._processes.clear()


def cluster(run: FailoverRun) -> list[Json]:
    return [
        nodes.node(f"n{i:03}", nodes.hgx(), labels={keys.LEAF: f"leaf-{i // run.leaf_size}"})
        for i in range(run.nodes)
    ]


def gang_pods(name: str, size: int) -> list[Json]:
    annotations = {keys.GANG: name, keys.GANG_SIZE: str(size)}
    return [nodes.pod(f"{name}-{i}", annotations=annotations) for i in range(size)]


async def failover(run: FailoverRun) -> Report:
    """Run the workload to its end with `run.kills` kills of the serving pod."""
    async with scheduler_pods(run, cluster(run)) as (url, replicas):
        return await _drive(run, url, replicas)


@contextlib.asynccontextmanager
async def scheduler_pods(
    run: FailoverRun, nodes: list[Json]
) -> AsyncIterator[tuple[str, list[Replica]]]:
    """The fake apiserver serving `nodes`, and the two scheduler pods started; its URL and the
    pods. Everything is killed on the way out."""
    with tempfile.TemporaryDirectory(prefix="failover-") as folder:
        logs = Path(folder)
        write_snapshot(nodes, logs / "cluster.json")
        kubeconfig = logs / "kubeconfig"
        apiserver = _serve(logs / "cluster.json", kubeconfig, run.apiserver_flags)
        replicas: list[Replica] = []
        try:
            url = _listening_url(apiserver)
            replicas = [Replica(n, run, url, kubeconfig, logs) for n in ("a", "b")]
            for replica in replicas:
                await replica.start()
            yield url, replicas
        finally:
            for replica in replicas:
                replica.kill()
            apiserver.kill()
            apiserver.wait()


def _serve(snapshot: Path, kubeconfig: Path, flags: tuple[str, ...]) -> subprocess.Popen[str]:
    """The fake apiserver process, on a port it picks."""
    command = [sys.executable, "-m", "testbed.fakeapi", "--port=0", f"--load={snapshot}"]
    command += [f"--kubeconfig-out={kubeconfig}", *flags]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)


async def _listening(log: Path, process: subprocess.Popen[bytes]) -> str:
    """The URL in the extender's "listening on" line, once it wrote it to `log`."""
    pattern = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
    while True:
        text = await asyncio.to_thread(log.read_text)
        if said := pattern.search(text):
            return said[1]
        if process.poll() is not None:
            raise RuntimeError(f"the extender exited before listening: {text[-2000:]}")
        await asyncio.sleep(POLL_SECONDS)


def _listening_url(apiserver: subprocess.Popen[str]) -> str:
    """The URL from the fake apiserver's first line, which it prints once it listens."""
    line = apiserver.stdout.readline() if apiserver.stdout else ""
    said = re.match(r"fake apiserver listening on (http://\S+): ", line)
    if said is None:
        raise RuntimeError(f"the fake apiserver did not start: {line!r}")
    return said[1]


async def _drive(run: FailoverRun, url: str, replicas: list[Replica]) -> Report:
    report, started = Report(), time.monotonic()
    observer = Observer(report, GPUS_PER_NODE)
    rng = random.Random(run.seed)
    async with client.ApiClient(client.Configuration(host=url)) as api:
        core: Any = client.CoreV1Api(api)
        leases: Any = client.CoordinationV1Api(api)
        watching = Reflector(
            core.list_pod_for_all_namespaces, observer.replace, observer.event, "pods"
        )
        watch = asyncio.create_task(watching.run())
        await eventually(watching.synced.is_set, within=30)
        await _create_gangs(run, rng, core, report)
        killing = asyncio.create_task(_kill(run, rng, core, leases, replicas, observer, report))
        try:
            await _run_gangs(run, rng, core, report, started, killing)
            await killing
        finally:
            killing.cancel()
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
    report.partly_bound = observer.partly_bound()
    report.elapsed = time.monotonic() - started
    return report


async def _create_gangs(run: FailoverRun, rng: random.Random, core: Any, report: Report) -> None:
    """`run.gangs` more gangs, all at once."""
    for _ in range(run.gangs):
        name, size = f"g{len(report.gangs):03}", rng.choice(run.sizes)
        report.gangs[name] = size
        for pod in gang_pods(name, size):
            await core.create_namespaced_pod("team-a", pod)


async def _run_gangs(
    run: FailoverRun,
    rng: random.Random,
    core: Any,
    report: Report,
    started: float,
    killing: asyncio.Task[None],
) -> None:
    """Delete each gang `hold` seconds after it is whole, until every gang has been; while
    kills are still to come, a new batch of gangs follows."""
    whole_at: dict[str, float] = {}
    while time.monotonic() - started < run.deadline:
        if len(whole_at) == len(report.gangs):
            if killing.done():
                return
            await _create_gangs(run, rng, core, report)
        now = time.monotonic()
        for gang in report.gangs_whole - whole_at.keys():
            whole_at[gang] = now
        for gang, at in whole_at.items():
            if at and now - at > run.hold:
                whole_at[gang] = 0.0  # deleted
                for i in range(report.gangs[gang]):
                    with contextlib.suppress(NotFound):
                        await call(
                            "delete pod", core.delete_namespaced_pod, f"{gang}-{i}", "team-a"
                        )
        await asyncio.sleep(0.05)


async def _kill(
    run: FailoverRun,
    rng: random.Random,
    core: Any,
    leases: Any,
    replicas: list[Replica],
    observer: Observer,
    report: Report,
) -> None:
    """Kill the serving pod `run.kills` times, each at a random moment after the last takeover
    when some gang is being placed; restart it once the other pod holds the Lease."""
    for _ in range(run.kills):
        await asyncio.sleep(rng.uniform(0.5, 2.5))
        serving = await serving_pod(leases, replicas)
        # Strike while a gang is being placed; patient, since on a loaded machine the first
        # plans may come many seconds after the start. None within the minute: recorded as 0.
        # The count the wait saw, not a second reading: a gang can bind whole in between.
        seen: list[int] = []
        with contextlib.suppress(AssertionError):
            await eventually(functools.partial(_count_plans, core, seen), within=60)
        report.plans_at_kills.append(seen[-1] if seen else 0)
        killed_at = time.monotonic()
        serving.kill()
        report.takeovers.append(await take_over(leases, serving, killed_at))
        try:
            await eventually(functools.partial(observer.bound_since, killed_at), within=30)
            report.first_binds.append(observer.last_bind - killed_at)
        except AssertionError:
            report.no_bind_after.append(len(report.takeovers))


async def serving_pod(leases: Any, replicas: list[Replica]) -> Replica:
    """The scheduler pod that holds the Lease, once one does."""
    while True:
        holder = await lease_holder(leases)
        if serving := next((r for r in replicas if r.identity == holder), None):
            return serving
        await asyncio.sleep(POLL_SECONDS)


async def take_over(leases: Any, killed: Replica, killed_at: float) -> float:
    """Seconds from the kill until the other pod holds the Lease; then the killed pod is
    started again (the kubelet's restart), and is the standby from then on."""
    holder = killed.identity
    while (await lease_holder(leases)) in ("", holder):  # noqa: ASYNC110 - polling the apiserver
        await asyncio.sleep(POLL_SECONDS)
    took = time.monotonic() - killed_at
    await killed.start()
    return took


async def _count_plans(core: Any, seen: list[int]) -> int:
    """`_plans`, each count also appended to `seen`."""
    seen.append(await _plans(core))
    return seen[-1]


async def _plans(core: Any) -> int:
    """Gang plans recorded: gangs planned and not yet bound whole."""
    records = await call("list plan records", core.list_namespaced_config_map, "kube-rdma")
    return len(records["items"])


async def lease_holder(leases: Any) -> str:
    try:
        lease = await call("read lease", leases.read_namespaced_lease, LEASE[1], LEASE[0])
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")
