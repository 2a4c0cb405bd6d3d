"""A pod's top owner, where KAI's annotations are read: up the controller ownerReferences to
the last workload object the extender keeps."""

from __future__ import annotations

from extender.cluster.owners import BATCH_JOBS, JOBSETS, Owners
from extender.gangs.top_owner import top_owner
from kube_rdma.core.objects import Json


def ref(kind: str, api_version: str, name: str, controller: bool = True) -> Json:
    return {"kind": kind, "apiVersion": api_version, "name": name, "controller": controller}


def obj(name: str, *refs: Json) -> Json:
    return {"metadata": {"name": name, "namespace": "team-a", "ownerReferences": list(refs)}}


POD = obj("llm-workers-0-3", ref("Job", "batch/v1", "llm-workers-0"))
JOB = obj("llm-workers-0", ref("JobSet", "jobset.x-k8s.io/v1alpha2", "llm"))
JOBSET = obj("llm", ref("TrainJob", "trainer.kubeflow.org/v1alpha1", "llm"))


def test_up_to_the_last_owner_kept() -> None:
    owners = Owners()
    owners.upsert(BATCH_JOBS, JOB)
    owners.upsert(JOBSETS, JOBSET)
    assert top_owner(POD, owners) is JOBSET, "a TrainJob is not kept: its JobSet is the top"


def test_a_missing_link_stops_the_walk() -> None:
    owners = Owners()
    owners.upsert(JOBSETS, JOBSET)
    assert top_owner(POD, owners) is None, "its Job is not in the cache"
    owners.upsert(BATCH_JOBS, JOB)
    assert top_owner(JOB, owners) is JOBSET


def test_only_the_controller_reference_is_followed() -> None:
    owners = Owners()
    owners.upsert(BATCH_JOBS, JOB)
    other = obj("p", ref("Job", "batch/v1", "llm-workers-0", controller=False))
    assert top_owner(other, owners) is None
    assert top_owner({"metadata": {}}, owners) is None


def test_a_cycle_of_bad_references_ends() -> None:
    owners = Owners()
    looped = obj("a", ref("Job", "batch/v1", "a"))
    owners.upsert(BATCH_JOBS, looped)
    assert top_owner(looped, owners) is looped
