"""Resources that already carry an RDMA device (the NVIDIA Network Operator's names, SR-IOV
VFs with RDMA) are never doubled by the webhook; netdevice-only VFs still get one."""

from __future__ import annotations

import pytest

from testbed.builders import network_pods, pods
from testbed.webhook_cases import apply
from tests.conftest import Serve
from tests.webhook.test_app import INJECT
from webhook.app import Settings

NETWORK_OPERATOR_RESOURCES = [
    "nvidia.com/hostdev",
    "nvidia.com/mlnxics",
    "nvidia.com/mlnxnics",
    "nvidia.com/sriov_resource",
    "nvidia.com/sriov_rdma_vf",
    "rdma.nvidia.com/hca",
    "rdma/rdma_shared_device_a",
]


@pytest.mark.parametrize("resource", NETWORK_OPERATOR_RESOURCES)
async def test_network_operator_resources_are_not_doubled(
    resource: str, serve: Serve, settings: Settings
) -> None:
    pod = network_pods.network_operator_pod("team-a", INJECT, resource)
    async with serve(settings) as client:
        result = apply(pods.request(pod), await client.review(pods.request(pod)))
    assert result["spec"]["containers"][0]["resources"] == pod["spec"]["containers"][0]["resources"]


@pytest.mark.parametrize("resource", ["intel.com/sriov_netdevice", "nvidia.com/sriov_net"])
async def test_netdevice_only_vfs_still_get_rdma(
    resource: str, serve: Serve, settings: Settings
) -> None:
    pod = network_pods.network_operator_pod("team-a", INJECT, resource)
    async with serve(settings) as client:
        result = apply(pods.request(pod), await client.review(pods.request(pod)))
    limits = result["spec"]["containers"][0]["resources"]["limits"]
    assert {k: v for k, v in limits.items() if "/" in k} == {
        "nvidia.com/gpu": "8",
        resource: "1",
        "rdma/hca": "1",
    }
