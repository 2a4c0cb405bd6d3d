"""A gang member's rank, from the index labels its controller sets, so that slices hold
consecutive ranks.

- Indexed Job: `batch.kubernetes.io/job-completion-index` (Kubernetes 1.28 and later also
  label it; older ones only annotate it).
- JobSet: `jobset.sigs.k8s.io/job-index` (its child Job) times the pods per Job, plus the
  child's completion index; pods per Job is the gang over `jobset.sigs.k8s.io/
  replicatedjob-replicas` (a JobSet of one replicated Job).
- Kubeflow training-operator: `training.kubeflow.org/replica-index` within the replica type;
  a PyTorchJob's master is rank 0 and its workers follow (worker i is rank i + 1, as the
  operator sets RANK), when the gang has a master.
- Kueue pod groups: `kueue.x-k8s.io/pod-group-pod-index`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.objects import Json

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOBSET_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
KUBEFLOW_INDEX = "training.kubeflow.org/replica-index"
KUBEFLOW_TYPE = "training.kubeflow.org/replica-type"
KUEUE_INDEX = "kueue.x-k8s.io/pod-group-pod-index"


def rank_of(pod: Json, gang_size: int, has_master: bool = False) -> int | None:
    """The member's rank; None when its labels give none."""
    meta = pod.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    completion = _int(labels.get(COMPLETION_INDEX) or annotations.get(COMPLETION_INDEX))
    job = _int(labels.get(JOBSET_JOB_INDEX))
    if job is not None:
        replicas = _int(labels.get(JOBSET_REPLICAS)) or 1
        return job * max(gang_size // replicas, 1) + (completion or 0)
    if completion is not None:
        return completion
    kubeflow = _int(labels.get(KUBEFLOW_INDEX))
    if kubeflow is not None:
        kind = (labels.get(KUBEFLOW_TYPE) or "").lower()
        return kubeflow + 1 if has_master and kind == "worker" else kubeflow
    return _int(labels.get(KUEUE_INDEX))


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
