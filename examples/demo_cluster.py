"""The demo's cluster: twelve HGX nodes in two leaves, differing the ways real ones do.

Every difference moves a verdict or a score the demo prints:
- leaf-1: gpu-01 as it should be; gpu-02 with one GPU whose PCIe link trained at x8 (affinity);
  gpu-03 on 200 Gb/s HDR rails (rate); gpu-04 half used and gpu-06 three-quarters used by running
  pods (busy for an 8-GPU pod; a 4-GPU pod packs onto gpu-04: binpack); gpu-05 with a rail down
  (unsuitable for 8 rails, fine for 4).
- leaf-2: gpu-07, -08 and -10 as they should be; gpu-09 with every PCIe link trained at x8, so
  its 400 Gb/s rails move 252 (rate) and its GPUs reach their NICs a level worse (affinity);
  gpu-11 on RoCE, not InfiniBand, and gpu-12 where the node agent never ran (both unsuitable).
  gpu-07 and gpu-08 publish their GPUs through DRA (ResourceSlices of NVIDIA's GPU driver, whose
  DeviceClass serves `nvidia.com/gpu` through `extendedResourceName`) while their RDMA NICs stay
  on the RDMA device plugin, as a cluster moving to DRA node by node has them: their verdicts
  and scores are those of their device-plugin neighbours. (A pod asking for `rdma/hca` could
  have no node whose NICs dranet publishes: no DeviceClass serves that resource.)

The pending work: the PyTorchJob llama-70b (1 Master + 3 Workers, 8 GPUs each: a gang of 4,
read off the job itself), whose pods are the webhook's patched worker as the training operator
would create them, and a 4-GPU fine-tuning pod that comes after it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.clustergen import write_snapshot
from testbed.clustergen.dra import dra_form

NAMESPACE = "ml-training"
JOB = "llama-70b"
JOB_UID = "6f1c2d9e-3b4a-4c5d-8e7f-0a1b2c3d4e5f"
MEMBERS = ("llama-70b-master-0", "llama-70b-worker-0", "llama-70b-worker-1", "llama-70b-worker-2")
FINETUNE = "finetune-0"
SCHEDULER = "rdma-scheduler"
"""The scheduler the pending pods name (a profile's `scheduling.schedulerName`): the extender
binds only the pods of the scheduler it serves."""
DRA_NODES = ("gpu-07", "gpu-08")


def _hardware() -> dict[str, Json]:
    x8 = nodes.trained(32.0, 8)
    made = [
        _ib("gpu-01", 1),
        _ib("gpu-02", 1, gpu_links={5: x8}),
        _ib("gpu-03", 1, rate=200.0),
        _ib("gpu-04", 1),
        _ib("gpu-05", 1, down=(3,)),
        _ib("gpu-06", 1),
        _ib("gpu-07", 2),
        _ib("gpu-08", 2),
        _ib("gpu-09", 2, pcie=x8),
        _ib("gpu-10", 2),
        nodes.node("gpu-11", nodes.hgx(link_layer="Ethernet"), labels=_leaf(2)),
        nodes.node("gpu-12", None, labels=_leaf(2)),
    ]
    return {node["metadata"]["name"]: node for node in made}


def _ib(name: str, leaf: int, **board: Any) -> Json:
    """An InfiniBand HGX node; `board` as testbed's `hgx` takes it."""
    return nodes.node(name, nodes.hgx("InfiniBand", **board), labels=_leaf(leaf))


def _leaf(n: int) -> dict[str, str]:
    return {keys.LEAF: f"leaf-{n}", keys.SPINE: "spine-1"}


def _running() -> list[Json]:
    """Pods already running: 4 GPUs on gpu-04, 6 on gpu-06."""
    return [
        nodes.pod(name, gpus=gpus, namespace="team-b", node_name=node, phase="Running")
        for name, gpus, node in (("eval-0", 4, "gpu-04"), ("serve-0", 6, "gpu-06"))
    ]


def pytorch_job(patched: Json) -> Json:
    """The job that owns the members: the extender sizes the gang from its replica specs."""
    template = {"spec": {"containers": patched["spec"]["containers"]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE, "uid": JOB_UID},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": 3, "template": template},
            }
        },
    }


def member(patched: Json, name: str) -> Json:
    """One of the job's pods: the webhook's patched worker, renamed, as the operator makes it."""
    pod = copy.deepcopy(patched)
    role, _, index = name.removeprefix(f"{JOB}-").partition("-")
    meta = pod["metadata"]
    meta.update(name=name, uid=f"uid-{name}")
    meta["labels"].update(
        {"training.kubeflow.org/replica-type": role, "training.kubeflow.org/replica-index": index}
    )
    meta["ownerReferences"] = [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": JOB, "uid": JOB_UID,
         "controller": True}
    ]  # fmt: skip
    pod["spec"]["schedulerName"] = SCHEDULER  # rdma-scheduler schedules them; the extender binds
    pod["status"] = {"phase": "Pending"}
    return pod


def finetune(patched: Json) -> Json:
    """A 4-GPU pod of no gang, patched like the rest."""
    pod = copy.deepcopy(patched)
    pod["metadata"].update(name=FINETUNE, uid=f"uid-{FINETUNE}", labels={})
    for field in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][field]["nvidia.com/gpu"] = "4"
    pod["spec"]["schedulerName"] = SCHEDULER
    pod["status"] = {"phase": "Pending"}
    return pod


def write_cluster(patched: Json, path: Path) -> list[str]:
    """Write the snapshot the extender reads; the names of its nodes."""
    hardware = _hardware()
    pending = [member(patched, name) for name in MEMBERS] + [finetune(patched)]
    objects = [*hardware.values(), *_running(), pytorch_job(patched), *pending]
    write_snapshot(dra_form(objects, DRA_NODES, nics=False), path)
    return list(hardware)
