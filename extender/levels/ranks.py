"""A gang member's rank, from the index labels its controller sets, so that slices hold
consecutive ranks. Each framework's rule is its module's in kube_rdma/core/frameworks/, read in
this order:

- JobSet (jobset.py): its child Job's index times the pods per Job, plus the child's
  completion index.
- Indexed Job (indexed_job.py): the completion index.
- Kubeflow training-operator (kubeflow.py): the replica index within the replica type; a
  PyTorchJob's master is rank 0 and its workers follow, when the gang has a master.
- Kueue pod groups (kueue.py): the pod's index in its group.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks import indexed_job, jobset, kubeflow, kueue
from kube_rdma.core.objects import Json


def rank_of(pod: Json, gang_size: int, has_master: bool = False) -> int | None:
    """The member's rank; None when its labels give none."""
    meta = pod.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    completion = indexed_job.completion_index(labels, annotations)
    job = jobset.rank(labels, completion, gang_size)
    if job is not None:
        return job
    if completion is not None:
        return completion
    kubeflow_rank = kubeflow.rank(labels, has_master)
    if kubeflow_rank is not None:
        return kubeflow_rank
    return kueue.pod_index(labels)
