"""The fake apiserver keeps a ResourceClaim's reservedFor as the apiserver does."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kube_rdma.core.objects import Json
from testbed.fakeapi import FakeApiServer
from testbed.fakeapi.errors import ApiError

ALLOCATION: Json = {"devices": {"results": []}}
POD_A = {"resource": "pods", "name": "a", "uid": "ua"}
POD_B = {"resource": "pods", "name": "b", "uid": "ub"}
INVALID = 'ResourceClaim.resource.k8s.io "c" is invalid: status.reservedFor'


def claim(status: Json) -> Json:
    return {"metadata": {"name": "c"}, "spec": {"devices": {}}, "status": status}


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        ({"reservedFor": [POD_A]}, ": Forbidden: may not be specified when `allocated` is not set"),
        (
            {"allocation": ALLOCATION, "reservedFor": [POD_A, POD_A]},
            '[1].uid: Duplicate value: "ua"',
        ),
        (
            {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "uid": "u"}]},
            "[0].name: Required value",
        ),
        (
            {
                "allocation": ALLOCATION,
                "reservedFor": [{**POD_A, "uid": f"u{i}"} for i in range(257)],
            },
            ": Too many: 257: must have at most 256 items",
        ),
    ],
)
async def test_invalid_reservations_are_refused(
    fake_api: FakeApiServer, status: Json, problem: str
) -> None:
    with pytest.raises(ApiError) as refused:
        fake_api.create("resourceclaims", claim(status), "default")
    assert (refused.value.code, refused.value.message) == (422, f"{INVALID}{problem}")
    assert fake_api.objects("resourceclaims") == []


async def test_reserving_and_unreserving_through_the_status_subresource(
    fake_api: FakeApiServer,
) -> None:
    fake_api.create("resourceclaims", claim({"allocation": ALLOCATION}), "default")
    async with fake_api.api_client() as api:
        custom = client.CustomObjectsApi(api)
        path = ("resource.k8s.io", "v1", "default", "resourceclaims", "c")
        stored = await custom.get_namespaced_custom_object(*path)
        stored["status"]["reservedFor"] = [POD_A, POD_B]
        await custom.replace_namespaced_custom_object_status(*path, stored)
        assert fake_api.get("resourceclaims", "c", "default")["status"]["reservedFor"] == [
            POD_A,
            POD_B,
        ]
        stored = await custom.get_namespaced_custom_object(*path)
        stored["status"] = {"reservedFor": [POD_B]}
        with pytest.raises(ApiException) as refused:
            await custom.replace_namespaced_custom_object_status(*path, stored)
    assert refused.value.status == 422
    assert fake_api.get("resourceclaims", "c", "default")["status"]["reservedFor"] == [POD_A, POD_B]
