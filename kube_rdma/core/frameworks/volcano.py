"""Volcano (volcano-sh/volcano; its API in volcano-sh/apis): a gang is a PodGroup
(`scheduling.volcano.sh/v1beta1`) whose `spec.minMember` is the size, named on each pod by the
group-name key: `scheduling.k8s.io/group-name` (pkg/apis/scheduling/v1beta1/labels.go,
KubeGroupNameAnnotationKey, the annotation Volcano's job controller sets) or
`scheduling.volcano.sh/group-name` (VolcanoGroupNameAnnotationKey, a label from Kubeflow
Trainer). Volcano Jobs (`batch.volcano.sh/v1alpha1`) label their pods with `volcano.sh/job-name`.
"""

from __future__ import annotations

from collections.abc import Mapping

SCHEDULING_GROUP = "scheduling.volcano.sh"
"""The API group of Volcano's PodGroups."""
PODGROUP_VERSION = "v1beta1"
BATCH_GROUP = "batch.volcano.sh"
"""The API group of Volcano Jobs."""
BATCH_VERSION = "v1alpha1"

GROUP_NAMES = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
"""The keys naming the pod's PodGroup, in the order they are read."""
JOB_NAME = "volcano.sh/job-name"

MARKS = (*GROUP_NAMES, JOB_NAME)
"""Keys whose presence marks a pod as a training job's."""


def group_name(both: Mapping[str, str]) -> str | None:
    """The PodGroup the pod names: the first group-name key with a value."""
    for key in GROUP_NAMES:
        if name := both.get(key):
            return name
    return None
