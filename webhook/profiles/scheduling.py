"""What a profile asks of the node its pods land on, beyond the scheduler they go to."""

from __future__ import annotations

from webhook.profiles.base import ProfileModel


class Scheduling(ProfileModel):
    require_gdr: bool = False
    """Only nodes with GPUDirect RDMA: the webhook writes `kube-rdma.io/require-gdr: "true"` on
    the pod, which the kube-rdma scheduler extender reads (pods must be scheduled through it)."""
    require_rdma_ready: bool = False
    """Only nodes the agent labels `kube-rdma.io/rdma-ready=true`: the webhook adds a required
    node affinity, which any scheduler honours; meant for pods that keep the default
    scheduler."""
