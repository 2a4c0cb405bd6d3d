"""Kueue (kubernetes-sigs/kueue).

Plain pod groups (keps/976-plain-pods; apis/kueue/v1beta1/constants.go): each pod carries its
group's name (`pod-group-name` label) and the group's size (`pod-group-total-count`
annotation), and optionally its index in the group (`pod-group-pod-index` label,
PodGroupPodIndexLabel), which gives a member's rank.

Topology-aware scheduling (apis/kueue/v1alpha1/topology_types.go): a pod template asks for a
level with `podset-required-topology` or `-preferred-topology`, and for slices of consecutive
ranks with `podset-slice-required-topology` and `-slice-size`. Pods Kueue's TAS admitted carry
the `tas` label (TASLabel) and the node selectors of Kueue's assignment; `topology` is the
scheduling gate Kueue holds them with until it has assigned them. Its Topology objects
(`kueue.x-k8s.io` v1beta1 and v1alpha1 `topologies`) list the levels.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks._values import index

GROUP = "kueue.x-k8s.io"
TOPOLOGY_VERSIONS = ("v1beta1", "v1alpha1")
"""The versions of its Topology objects, in the order they are tried."""

POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
POD_GROUP_POD_INDEX = "kueue.x-k8s.io/pod-group-pod-index"

PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
TAS = "kueue.x-k8s.io/tas"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"

MARKS = (POD_GROUP_NAME,)
"""Keys whose presence marks a pod as a training job's."""


def group_name(both: Mapping[str, str]) -> str | None:
    """The pod group the pod names."""
    return both.get(POD_GROUP_NAME)


def pod_index(labels: Mapping[str, str]) -> int | None:
    """The pod's index in its group; None when it has none."""
    return index(labels.get(POD_GROUP_POD_INDEX))


def placed(labels: Mapping[str, str]) -> bool:
    """Kueue's TAS admitted the pod and gave it its domain (the label its webhook adds)."""
    return TAS in labels
