"""The nomination the extender writes (`--nominate-members`), as the real apiserver takes it: a
JSON patch of the pod's status subresource that sets status.nominatedNodeName under a test of
the pod's uid. The pod keeps its spec; a patch made for a pod's former uid is refused whole."""

from __future__ import annotations

import pytest

from extender.cluster.nominations import JSON_PATCH, nomination_patch
from testbed.controlplane.rest import ApiError, Rest


def pending(api: Rest, namespace: str, name: str) -> str:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        # No scheduler serves this name: the pod stays pending.
        "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "pause"}]},
    }
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", pod)
    uid: str = created["metadata"]["uid"]
    return uid


def test_a_pending_pod_is_nominated_then_not_and_a_former_uid_is_refused(
    api: Rest, namespace: str
) -> None:
    uid = pending(api, namespace, "m-0")
    path = f"/api/v1/namespaces/{namespace}/pods/m-0/status"
    patched = api.patch(path, nomination_patch(uid, "gpu-7"), JSON_PATCH)
    assert patched["status"]["nominatedNodeName"] == "gpu-7"
    assert patched["spec"]["schedulerName"] == "nobody"
    with pytest.raises(ApiError) as refused:
        api.patch(path, nomination_patch("the-pod-before", "gpu-8"), JSON_PATCH)
    assert refused.value.status == 422, refused.value
    assert api.get(path)["status"]["nominatedNodeName"] == "gpu-7"
    cleared = api.patch(path, nomination_patch(uid, None), JSON_PATCH)
    assert not cleared["status"].get("nominatedNodeName")
