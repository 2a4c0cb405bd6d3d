"""DeviceTaintRule in the fake apiserver, at the version each Kubernetes release serves it
(k8s.io/api at release-1.33..release-1.36 and master, resource/*/types.go: v1alpha3 from 1.33,
v1beta2 from 1.36, v1 from 1.37), found through discovery and written like any resource."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from testbed.fakeapi import FakeApiServer, device_taint_rules

RULE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "r", "labels": {"a": "b"}},
    "spec": {
        "deviceSelector": {"driver": "dra.net", "pool": "n", "device": "d"},
        "taint": {"key": "k", "value": "v", "effect": "NoSchedule"},
    },
}


@pytest.mark.parametrize(
    ("release", "version"),
    [("1.33", "v1alpha3"), ("1.35", "v1alpha3"), ("1.36", "v1beta2"), ("1.37", "v1")],
)
async def test_served_per_release(fake_api: FakeApiServer, release: str, version: str) -> None:
    async with fake_api.api_client() as api:
        custom = client.CustomObjectsApi(api)
        with pytest.raises(ApiException) as e:
            await custom.get_api_resources("resource.k8s.io", "v1alpha3")
        assert e.value.status == 404, "not served by default (alpha and beta are off)"
        fake_api.install("devicetaintrules", device_taint_rules(release))
        found = await custom.get_api_resources("resource.k8s.io", version)
        assert [r.name for r in found.resources if r.kind == "DeviceTaintRule"] == [
            "devicetaintrules"
        ]
        body = RULE | {"apiVersion": f"resource.k8s.io/{version}"}
        await custom.create_cluster_custom_object(
            "resource.k8s.io", version, "devicetaintrules", body
        )
        listed = await custom.list_cluster_custom_object(
            "resource.k8s.io", version, "devicetaintrules", label_selector="a=b"
        )
        assert [r["spec"] for r in listed["items"]] == [RULE["spec"]]
        await custom.delete_cluster_custom_object(
            "resource.k8s.io", version, "devicetaintrules", "r"
        )
        assert fake_api.objects("devicetaintrules") == []
