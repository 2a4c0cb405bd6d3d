"""scheduler-plugins' coscheduling (kubernetes-sigs/scheduler-plugins, apis/scheduling/v1alpha1
types.go): a gang is a PodGroup (`scheduling.x-k8s.io/v1alpha1`) whose `spec.minMember` is the
size, named on each pod by the `scheduling.x-k8s.io/pod-group` label (PodGroupLabel).
"""

from __future__ import annotations

from collections.abc import Mapping

GROUP = "scheduling.x-k8s.io"
"""The API group of its PodGroups."""
PODGROUP_VERSION = "v1alpha1"

POD_GROUP = "scheduling.x-k8s.io/pod-group"

MARKS = (POD_GROUP,)
"""Keys whose presence marks a pod as a training job's."""


def group_name(both: Mapping[str, str]) -> str | None:
    """The PodGroup the pod names."""
    return both.get(POD_GROUP)
