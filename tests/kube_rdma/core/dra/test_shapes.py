"""Reading the three served versions, on the objects the drivers publish."""

from __future__ import annotations

from kube_rdma.core.dra.kinds import kind_of, numa_node, pci_address
from kube_rdma.core.dra.shapes import (
    Request,
    Selection,
    allocated_devices,
    read_devices,
    read_requests,
    reserved_for,
)
from tests.kube_rdma.core.dra.fixtures import load


def test_the_nvidia_gpu_slice_reads_as_one_gpu_with_its_pci_address() -> None:
    [device] = read_devices(load("nvidia-gpu-slice-v1.yaml")[0])
    assert device.id == (
        "gpu.nvidia.com",
        "vks-cluster-0-np1-worker-njbp2-s2rvz-577zj",
        "gpu-0",
    )
    assert device.attributes["gpu.nvidia.com/type"] == "gpu"
    assert device.attributes["gpu.nvidia.com/cudaComputeCapability"] == "8.0.0"
    assert device.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:03"
    assert device.capacity == {"gpu.nvidia.com/memory": 8 * 2**30}
    assert kind_of(device) == "gpu"
    assert pci_address(device) == "0000:03:00.0"


def test_the_dranet_slice_reads_as_an_rdma_nic_on_its_numa_node() -> None:
    published = load("dranet-slice-v1.yaml")[0]
    # The published excerpt ends before the driver and pool: complete them as dranet writes them.
    published["spec"].update({"driver": "dra.net", "pool": {"name": "n1"}, "nodeName": "n1"})
    [device] = read_devices(published)
    assert (device.name, device.attributes["dra.net/ifName"]) == ("gpu7rdma0", "gpu7rdma0")
    assert device.attributes["dra.net/rdma"] is True
    assert (kind_of(device), numa_node(device)) == ("nic", 1)


def test_v1beta1_devices_wrapped_in_basic_read_like_v1() -> None:
    v1beta1 = {
        "spec": {
            "driver": "dra.net",
            "pool": {"name": "n1"},
            "devices": [{"name": "eth1", "basic": {"attributes": {"rdma": {"bool": True}}}}],
        }
    }
    [device] = read_devices(v1beta1)
    assert device.attributes == {"dra.net/rdma": True}


def test_requests_read_alike_in_v1_and_v1beta1() -> None:
    [v1] = read_requests(load("dranet-claims-allocated-v1.yaml")[0]["spec"])
    [v1beta1] = read_requests(load("dranet-claim-v1beta1.yaml")[0]["spec"])
    assert v1 == Request(
        "rdma-net-interface",
        (Selection("dranet", ('device.attributes["dra.net"].rdma == true',), True, 0),),
    )
    assert v1beta1 == Request(
        "req-phy-interface",
        (
            Selection(
                "multinic",
                ('device.attributes["dra.net"].cloudNetwork.contains("dranet-net")',),
                False,
                1,
            ),
        ),
    )


def test_first_available_keeps_its_subrequests_in_order() -> None:
    spec = {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "h200", "count": 8},
                        {"name": "small", "deviceClassName": "h100", "count": 4},
                    ],
                }
            ]
        }
    }
    [request] = read_requests(spec)
    assert request.alternatives == (
        Selection("h200", (), False, 8),
        Selection("h100", (), False, 4),
    )


def test_an_allocated_claim_names_its_devices_and_the_pods_it_is_reserved_for() -> None:
    claim = load("dranet-claims-allocated-v1.yaml")[0]
    devices = allocated_devices(claim)
    pool = "gke-dra-1-gpu-nodes-2-e5f6f579-7je4"
    assert devices == [(("dra.net", pool, f"gpu{i}rdma0"), False) for i in range(8)]
    claim["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u1"}]
    assert reserved_for(claim) == ["u1"]
