"""Gangs without a single kube-rdma key: PyTorchJob, JobSet (a Trainer TrainJob's) and MPIJob
pods created as their controllers create them, owner object first, are placed whole by the real
extender (live mode, watching the owners on the fake apiserver) under the emulated
kube-scheduler, and explain shows the gang each pod was found in.

Eight 8-GPU nodes hold one 5-pod gang of 8-GPU pods at a time. The PyTorchJob's and the
JobSet's pods arrive interleaved: a scheduler that did not see them as gangs would bind four of
each and leave both partial, holding 64 GPUs that nothing uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from extender.cluster.owners import MPI_JOBS_V1, WORKLOADS
from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler, SchedulerConfig
from kubesim.scheduler.controllers import Controllers, Replicas
from testbed.fakeapi import RESOURCES, WORKLOAD_RESOURCES, FakeApiServer, eventually
from tests.extender.gangs.explaining import gang_part
from tests.extender.gangs.test_gang_proof import CONFIG, SMALL, TRANSIENT, load

NS = "team-a"


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    """A fake apiserver with every training CRD installed."""
    async with FakeApiServer({**RESOURCES, **WORKLOAD_RESOURCES}) as server:
        yield server


@asynccontextmanager
async def extender(api: FakeApiServer) -> AsyncIterator[str]:
    async with api.api_client() as api_client:
        source = LiveSource(
            client.CoreV1Api(api_client), custom_api=client.CustomObjectsApi(api_client)
        )
        runner = web.AppRunner(create_app(Settings(), source), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            served = [r for r in WORKLOADS if r != MPI_JOBS_V1]  # the fake serves MPIJob v2beta1
            await eventually(
                lambda: source.ready() and all(map(source.owners.listed, served)), within=30.0
            )
            yield f"http://127.0.0.1:{runner.addresses[0][1]}"
        finally:
            await runner.cleanup()


async def gang_seen(url: str, pod: str) -> Json:
    gang = await gang_part(url, NS, pod)
    gang.pop("plan", None)
    gang.pop("waiting", None)  # a member still pending when asked waits for its gang
    gang.pop("capacity", None)
    gang.pop("whole", None)  # a gang bound whole when asked says so (test_explain_bound.py)
    gang.pop("levels", None)  # tests/extender/gangs/test_levels_explain.py shows them
    return gang


def interleaved(*jobs: list[Json]) -> list[Json]:
    return [pod for group in zip(*jobs, strict=False) for pod in group] + [
        pod for job in jobs for pod in job[min(map(len, jobs)) :]
    ]


async def test_training_jobs_without_gang_keys_are_placed_whole(api: FakeApiServer) -> None:
    load(api, SMALL)
    controllers = Controllers(api.create)
    llama = controllers.pytorch_job(
        NS, "llama", [Replicas("Master", 1, 8), Replicas("Worker", 4, 8)]
    )
    qwen = controllers.jobset(
        NS, "qwen", [Replicas("initializer", 1, 0), Replicas("node", 5, 8)], train_job=True
    )
    async with (
        extender(api) as url,
        EmulatedScheduler(api.host, url, CONFIG, gangs=controllers.gang_of) as scheduler,
    ):
        for pod in interleaved(llama, qwen):
            api.create("pods", pod)
        recorder = scheduler.recorder
        assert await scheduler.run_until(lambda: len(recorder.time_to_place()) == 1, 30.0)
        explained = {
            pod: await gang_seen(url, pod)
            for pod in ("llama-master-0", "llama-worker-3", "qwen-node-4-0", "qwen-initializer-0-0")
        }
        [(_, first)] = recorder.time_to_place()
        done = llama if first == "llama" else qwen
        for pod in done:
            api.delete("pods", pod["metadata"]["name"], NS)
        assert await scheduler.run_until(lambda: len(recorder.time_to_place()) == 2, 30.0)
        for pod in llama + qwen:
            if pod not in done:
                api.delete("pods", pod["metadata"]["name"], NS)
        for pod in controllers.mpi_job(NS, "bert", workers=6, gpus=8):
            api.create("pods", pod)
        assert await scheduler.run_until(lambda: len(recorder.time_to_place()) == 3, 30.0)
        for name in ("bert-worker-0", "bert-launcher-0"):
            explained[name] = await gang_seen(url, name)
    assert {k: g.size for k, g in recorder.gangs.items()} == {
        (NS, "llama"): 5,
        (NS, "qwen"): 5,
        (NS, "bert"): 6,
    }
    assert recorder.max_partial_gangs(TRANSIENT) == 0
    llama_gang = {
        "name": "team-a/llama",
        "size": 5,
        "source": "PyTorchJob llama: 1 Master + 4 Worker",
    }
    qwen_source = "TrainJob qwen, JobSet qwen: 5 node (initializer not counted: no GPU or RDMA)"
    assert explained == {
        "llama-master-0": llama_gang,
        "llama-worker-3": llama_gang,
        "qwen-node-4-0": {"name": "team-a/qwen", "size": 5, "source": qwen_source},
        "qwen-initializer-0-0": {"singleton": f"not counted in gang team-a/qwen ({qwen_source})"},
        "bert-worker-0": {"name": "team-a/bert", "size": 6, "source": "MPIJob bert: 6 Worker"},
        "bert-launcher-0": {"singleton": "the launcher of MPIJob bert, whose gang is its Workers"},
    }


async def test_without_the_extender_both_jobs_sit_partial(api: FakeApiServer) -> None:
    load(api, SMALL)
    controllers = Controllers(api.create)
    llama = controllers.pytorch_job(
        NS, "llama", [Replicas("Master", 1, 8), Replicas("Worker", 4, 8)]
    )
    qwen = controllers.jobset(NS, "qwen", [Replicas("node", 5, 8)])
    plain = SchedulerConfig(use_extender=False, backoff_initial=0.05, backoff_max=0.5)
    async with EmulatedScheduler(api.host, None, plain, gangs=controllers.gang_of) as scheduler:
        for pod in interleaved(llama, qwen):
            api.create("pods", pod)
        await scheduler.run_until(lambda: False, 1.5)
    assert scheduler.recorder.max_partial_gangs(1.0) == 2
