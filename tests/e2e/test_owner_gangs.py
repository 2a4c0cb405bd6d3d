"""Gangs found from their owners alone: a PyTorchJob and a JobSet, from real CRDs."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

from kube_rdma.core.objects import Json
from kubesim.scheduler.controllers import Controllers, Replicas
from testbed.controlplane.apply import group_prefix
from testbed.controlplane.components import Stack
from testbed.controlplane.gangs import SCHEDULER, create_pods, leaf_of, placements, wait_bound
from testbed.controlplane.rest import Rest


def creator(api: Rest) -> Controllers:
    """Controllers that create the owner objects (PyTorchJob, JobSet, batch Jobs) for real."""

    def create(resource: str, obj: Json) -> Json:
        plural = resource.split(".", 1)[0]
        meta = obj["metadata"]
        path = f"{group_prefix(obj['apiVersion'])}/namespaces/{meta['namespace']}/{plural}"
        return api.post(path, obj)

    return Controllers(create, scheduler_name=SCHEDULER)


LEVELS = {
    "source": "kube-rdma",
    "inUse": ["kube-rdma.io/leaf", "kube-rdma.io/spine"],
    "asks": "no level asked (none)",
}
"""The network levels explain shows for a gang bound whole: the extender's default
vocabulary, as the e2e nodes are labelled, and nothing the jobs ask."""


def explained_gang(stack: Stack, namespace: str, name: str) -> Json:
    query = urllib.parse.urlencode({"namespace": namespace, "name": name})
    url = f"http://127.0.0.1:{stack.extender_port}/explain?{query}"
    with urllib.request.urlopen(url, timeout=10) as response:
        gang: Json = json.loads(response.read())["gang"]
    gang.pop("plan", None)
    gang.pop("capacity", None)
    gang.pop("whole", None)  # a gang bound whole when asked says so (tests/extender)
    return gang


def test_pytorchjob_and_jobset_gangs_form_from_their_owners(
    stack: Stack, api: Rest, namespace: str
) -> None:
    controllers = creator(api)
    llama = controllers.pytorch_job(
        namespace, "llama", [Replicas("Master", 1, 8), Replicas("Worker", 3, 8)]
    )
    qwen = controllers.jobset(namespace, "qwen", [Replicas("node", 3, 8)])
    for pod in [*llama, *qwen]:
        pod.pop("status")
    create_pods(api, [pod for pair in zip(llama, qwen, strict=False) for pod in pair])
    create_pods(api, llama[len(qwen) :])

    wait_bound(api, namespace, "llama", 4)
    wait_bound(api, namespace, "qwen", 3)

    for job in ("llama", "qwen"):
        leaves = {leaf_of(n) for n in placements(api, namespace, job).values() if n}
        assert len(leaves) == 1, (job, leaves)
    assert explained_gang(stack, namespace, "llama-worker-2") == {
        "name": f"{namespace}/llama",
        "size": 4,
        "source": "PyTorchJob llama: 1 Master + 3 Worker",
        "levels": LEVELS,
    }
    assert explained_gang(stack, namespace, "qwen-node-2-0") == {
        "name": f"{namespace}/qwen",
        "size": 3,
        "source": "JobSet qwen: 3 node",
        "levels": LEVELS,
    }
