"""Kubernetes' own gangs: a PyTorchJob's, a JobSet's and an indexed Job's pods that name a
scheduling.k8s.io group, and carry no kube-rdma key, are planned as one gang each from the group
alone (their owners are never created, so no owner can size them), through the fake apiserver
serving one version of the API and the real extender over HTTP, under the emulated
kube-scheduler. One test per served version: the 1.35 Workload (`v1alpha1`, pods'
`spec.workloadRef`), the 1.36 PodGroup (`v1alpha2`, `spec.schedulingGroup`) and the 1.37
PodGroups (`v1alpha3`, `v1beta1`), read as kubernetes/api types.go defines each (release-1.35,
release-1.36, master).

Eight 8-GPU nodes hold the three gangs (3 + 2 + 3 pods of 8 GPUs) at once, their pods arriving
interleaved. Each runs with the emulated kube-scheduler's GangScheduling plugin off (the
extender keeps its own bind barrier, `--native-gang-scheduling=off`) and on (Permit in 1.35,
the PodGroup cycle from 1.36; the extender leaves the barrier to it, `auto`). The emulated
scheduler has no informer of groups: the test hands it the objects as kube-scheduler's would,
and runs on the loop's clock, whose waits at Permit the last member wakes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from extender.gangs.native import BARRIER, HELD
from extender.gangs.settings import GangSettings
from kube_rdma.core.frameworks import indexed_job
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupRef
from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler
from kubesim.scheduler.clock import LoopClock
from kubesim.scheduler.controllers import Controllers, Replicas
from testbed.fakeapi import RESOURCES, FakeApiServer, eventually, native_gang_resources
from tests.extender.gangs.explaining import explained_gang
from tests.extender.gangs.test_gang_proof import CONFIG, SMALL, TRANSIENT, load

NS = "team-a"
SIZES = {"llama": 3, "qwen": 2, "bert": 3}
"""Gang -> minCount: a PyTorchJob (1 Master + 2 Workers), a JobSet (2 pods), an indexed Job."""
GROUP = "scheduling.k8s.io"


@asynccontextmanager
async def extender(api: FakeApiServer, mode: str = "off") -> AsyncIterator[tuple[str, LiveSource]]:
    async with api.api_client() as api_client:
        source = LiveSource(
            client.CoreV1Api(api_client), custom_api=client.CustomObjectsApi(api_client)
        )
        settings = Settings(gangs=GangSettings(native_gang_scheduling=mode))
        runner = web.AppRunner(create_app(settings, source), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            await eventually(source.ready, within=30.0)
            yield f"http://127.0.0.1:{runner.addresses[0][1]}", source
        finally:
            await runner.cleanup()


def phantom(plural: str, obj: Json) -> Json:
    """An owner the controllers would create, left out of the apiserver: only the group can
    size the gang."""
    obj["metadata"]["uid"] = f"uid-{obj['metadata']['name']}"
    return obj


def jobs() -> list[list[Json]]:
    """The three jobs' pods, each without any kube-rdma key."""
    controllers = Controllers(phantom)
    llama = controllers.pytorch_job(
        NS, "llama", [Replicas("Master", 1, 8), Replicas("Worker", 2, 8)]
    )
    qwen = controllers.jobset(NS, "qwen", [Replicas("node", 2, 8)])
    bert = []
    for index in range(SIZES["bert"]):
        pod = copy.deepcopy(llama[0])
        labels = {indexed_job.JOB_NAME: "bert", indexed_job.COMPLETION_INDEX: str(index)}
        pod["metadata"] = {"name": f"bert-{index}", "namespace": NS, "labels": labels}
        bert.append(pod)
    return [llama, qwen, bert]


def name_groups(version: str, pods: list[Json], gang: str) -> None:
    for pod in pods:
        if version == "v1alpha1":
            pod["spec"]["workloadRef"] = {"name": "train", "podGroup": gang}
        else:
            pod["spec"]["schedulingGroup"] = {"podGroupName": gang}


def create_groups(api: FakeApiServer, version: str) -> list[Json]:
    api_version = f"{GROUP}/{version}"
    if version == "v1alpha1":
        groups = [{"name": n, "policy": {"gang": {"minCount": c}}} for n, c in SIZES.items()]
        workload = {"apiVersion": api_version, "kind": "Workload",
                    "metadata": {"name": "train", "namespace": NS},
                    "spec": {"podGroups": groups}}  # fmt: skip
        return [api.create("workloads.scheduling.k8s.io", workload)]
    made = []
    for name, count in SIZES.items():
        spec: Json = {"schedulingPolicy": {"gang": {"minCount": count}}}
        if version == "v1beta1":
            spec["disruptionMode"] = {"all": {}}
        group = {"apiVersion": api_version, "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": NS}, "spec": spec}  # fmt: skip
        made.append(api.create("podgroups.scheduling.k8s.io", group))
    return made


def gang_key(version: str, name: str) -> str:
    return f"train/{name}" if version == "v1alpha1" else name


@pytest.mark.parametrize("plugin", [False, True], ids=["gang-plugin-off", "gang-plugin-on"])
@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2", "v1alpha3", "v1beta1"])
async def test_pods_naming_a_group_are_planned_as_one_gang_from_it(
    version: str, plugin: bool
) -> None:
    async with FakeApiServer({**RESOURCES, **native_gang_resources(version)}) as api:
        load(api, SMALL)
        llama, qwen, bert = jobs()
        members: dict[str, tuple[tuple[str, str], int]] = {}
        for name, pods in zip(SIZES, (llama, qwen, bert), strict=True):
            name_groups(version, pods, name)
            members |= {p["metadata"]["name"]: ((NS, gang_key(version, name)), SIZES[name])
                        for p in pods}  # fmt: skip
        made = create_groups(api, version)
        cycle = plugin and version != "v1alpha1"  # 1.35 holds a gang at Permit only
        config = dataclasses.replace(CONFIG, gang_scheduling=plugin, pod_group_cycle=cycle)

        def gangs(pod: Json) -> tuple[tuple[str, str], int] | None:
            return members.get(pod["metadata"]["name"])

        async with extender(api, "auto" if plugin else "off") as (url, source):
            ref = GroupRef("Workload", "train", "bert") if version == "v1alpha1" else None
            await eventually(
                lambda: source.cluster.native.find(NS, ref or GroupRef("PodGroup", "bert")),
                within=10.0,
            )
            async with EmulatedScheduler(
                api.host, url, config, gangs=gangs, clock=LoopClock()
            ) as scheduler:
                for obj in made:
                    scheduler.pod_group_changed(None, obj)
                interleaved = [p for trio in zip(llama, qwen, bert, strict=False) for p in trio]
                for pod in interleaved + llama[2:] + bert[2:]:
                    api.create("pods", pod)
                recorder = scheduler.recorder
                placed = await scheduler.run_until(lambda: len(recorder.time_to_place()) == 3, 30.0)
                assert placed, "every gang is placed whole"
                seen = {
                    pod: await explained_gang(url, NS, pod) for pod in ("llama-worker-1", "bert-0")
                }
        assert recorder.max_partial_gangs(TRANSIENT) == 0
    kind = "Workload" if version == "v1alpha1" else "PodGroup"
    for member, name in (("llama-worker-1", "llama"), ("bert-0", "bert")):
        group = "train" if version == "v1alpha1" else name
        native = {
            "group": f"{kind} {NS}/{group} ({GROUP}/{version})",
            "minCount": SIZES[name],
            "mode": HELD if plugin else BARRIER,
            "disruptionMode": "All" if version == "v1beta1" else "Single",
        }
        assert seen[member] == {
            "name": f"{NS}/{gang_key(version, name)}",
            "size": SIZES[name],
            "source": f"{kind} {GROUP}/{version}",
            "native": native,
        }
