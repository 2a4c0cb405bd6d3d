"""What a profile asks of the node its pods land on, beyond the scheduler they go to."""

from __future__ import annotations

from pydantic import field_validator

from kube_rdma.core.nodeselector import qualified_name
from webhook.profiles.base import ProfileModel

NVLINK = "nvlink"


class Scheduling(ProfileModel):
    require_gdr: bool = False
    """Only nodes with GPUDirect RDMA: the webhook writes `kube-rdma.io/require-gdr: "true"` on
    the pod, which the kube-rdma scheduler extender reads (pods must be scheduled through it)."""
    require_rdma_ready: bool = False
    """Only nodes the agent labels `kube-rdma.io/rdma-ready=true`: the webhook adds a required
    node affinity, which any scheduler honours; meant for pods that keep the default
    scheduler."""
    topology_required: str | None = None
    """The network level each gang of the profile's pods must be placed inside, or wait:
    `nvlink` for the NVLink domain (multi-node NVLink jobs), or a level's node label (e.g.
    `kube-rdma.io/spine`). The webhook writes `kube-rdma.io/topology-required` on the pod, which
    the kube-rdma scheduler extender reads."""
    topology_preferred: str | None = None
    """The level each gang is tried in first (`kube-rdma.io/topology-preferred`)."""

    @field_validator("topology_required", "topology_preferred")
    @classmethod
    def _level(cls, value: str | None) -> str | None:
        if value is not None and value != NVLINK and not qualified_name(value):
            raise ValueError(
                f"{value!r} is not a level: give `nvlink` or a node label key such as "
                "kube-rdma.io/leaf or fabric.topograph.run/tier-1"
            )
        return value
