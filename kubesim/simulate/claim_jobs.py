"""Jobs whose pods take their GPUs and RDMA NICs through a resource claim, as pods do in a DRA
cluster.

Each pod of `gpus` GPUs names one claim made from the ResourceClaimTemplate `gpu-nic-<gpus>` of
its namespace, and its container requests no `nvidia.com/gpu` and no RDMA resource. The template
asks for `gpus` GPU-NIC pairs, each pair a GPU request and a NIC request under its own
`matchAttribute: resource.kubernetes.io/pcieRoot` constraint, as manifests/examples/dra's does;
the simulation adds one per namespace and size, from the snapshot's DeviceClasses of GPUs and
of RDMA NICs (the first by name of each kind, kinds as kube_rdma/core/dra/kinds.py tells them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kube_rdma.core.config_file import ConfigError
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, Job

CLAIM = "gpu-nic"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


@dataclass(frozen=True)
class ClaimJob(Job):
    """A Job whose pods get their devices from a claim of `gpus` GPU-NIC pairs."""

    @property
    def template(self) -> str:
        return f"{CLAIM}-{self.gpus}"

    def _pod(self, name: str, index: int, scheduler_name: str) -> Json:
        pod = super()._pod(name, index, scheduler_name)
        if self.gpus:
            entry = {"name": CLAIM, "resourceClaimTemplateName": self.template}
            pod["spec"]["resourceClaims"] = [entry]
        return pod

    def _container(self) -> Json:
        container = super()._container()
        resources = container["resources"]
        for amounts in (resources["limits"], resources["requests"]):
            amounts.pop(GPU, None)
            amounts.pop(self.rdma_resource, None)
        if self.gpus:
            resources["claims"] = [{"name": CLAIM}]
        return container


def device_classes(index: DraIndex) -> tuple[str, str] | None:
    """The DeviceClasses of GPUs and of RDMA NICs (None when the cluster lacks either)."""
    selectors = Selectors()
    found: dict[str, str] = {}
    for name in sorted(index.classes):
        kind = index.kind_of_class(index.classes[name].selectors, (), selectors)
        if kind is not None:
            found.setdefault(kind, name)
    if "gpu" not in found or "nic" not in found:
        return None
    return found["gpu"], found["nic"]


def claim_templates(jobs: Iterable[Job], index: DraIndex) -> list[Json]:
    """The templates the claim jobs name; raises ConfigError when the cluster has no
    DeviceClass of GPUs or of RDMA NICs to make them from."""
    wanted = sorted({(j.namespace, j.gpus) for j in jobs if isinstance(j, ClaimJob) and j.gpus})
    if not wanted:
        return []
    classes = device_classes(index)
    if classes is None:
        raise ConfigError(
            "jobs ask for devices through claims, and the cluster has no DeviceClass of GPUs "
            "and one of RDMA NICs (with ResourceSlices publishing such devices): add them to "
            "the snapshot, or run the jobs without dra"
        )
    return [pair_template(namespace, gpus, *classes) for namespace, gpus in wanted]


def pair_template(namespace: str, pairs: int, gpu_class: str, nic_class: str) -> Json:
    requests: list[Json] = []
    constraints: list[Json] = []
    for i in range(pairs):
        requests += [
            {"name": f"gpu-{i}", "exactly": {"deviceClassName": gpu_class}},
            {"name": f"nic-{i}", "exactly": {"deviceClassName": nic_class}},
        ]
        constraints.append({"requests": [f"gpu-{i}", f"nic-{i}"], "matchAttribute": PCIE_ROOT})
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"{CLAIM}-{pairs}", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": requests, "constraints": constraints}}},
    }
