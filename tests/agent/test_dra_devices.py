"""Finding the agent's NICs among a node's published DRA devices (agent/dra_devices.py), with
slices as the drivers publish them (tests/fixtures/dra, tests/fixtures/dra-webhook)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.dra_devices import DeviceId, SliceError, match, node_devices, pci_address, read_slice
from kube_rdma.core.topology import Nic, Port
from testbed.builders.dra_slices import resource_slice

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def nic(name: str, pci: str | None, *netdevs: str) -> Nic:
    ports = tuple(
        Port(port=i + 1, state="ACTIVE", link_layer="Ethernet", netdev=n, healthy=True)
        for i, n in enumerate(netdevs)
    )
    return Nic(name=name, pci=pci, ports=ports)


def test_dranets_published_slices() -> None:
    """GKE's dranet slice (the older split PCI address, v1beta1's `basic`) and Azure GB300's
    (pciAddress and rdmaDevice)."""
    gke = yaml.safe_load((FIXTURES / "dra/dranet-slice-v1.yaml").read_text())
    # The published excerpt stops before these (tests/fixtures/dra/README.md).
    gke["spec"] |= {"driver": "dra.net", "nodeName": "n", "pool": {"name": "n", "generation": 1}}
    driver, _, generation, (device,) = read_slice(gke)
    assert (driver, device.pci, device.netdevs) == (
        "dra.net",
        frozenset({"0000:c8:00.0"}),
        frozenset({"gpu7rdma0"}),
    )
    assert generation == 1
    gb300 = yaml.safe_load((FIXTURES / "dra-webhook/gb300-dranet-slice.yaml").read_text())
    devices = node_devices([gb300]).devices
    first = devices[0]
    assert (first.id.device, first.pci, first.rdma) == (
        "pci-0101-00-00-0",
        frozenset({"0101:00:00.0"}),
        frozenset({"mlx5_0"}),
    )
    found = match([nic("mlx5_0", "0101:00:00.0"), nic("mlx5_1", "0102:00:00.0")], devices)
    assert {n: d.id.device for n, d in found.devices.items()} == {
        "mlx5_0": "pci-0101-00-00-0",
        "mlx5_1": "pci-0102-00-00-0",
    }
    assert found.skipped == []


def test_a_device_of_two_nics_goes_to_neither() -> None:
    both = {
        "name": "both",
        "attributes": {
            "dra.net/ifName": {"string": "eth1"},
            "example.com/ifName": {"string": "eth2"},
        },
    }
    devices = node_devices([resource_slice("n", "dra.net", [both])]).devices
    found = match([nic("mlx5_0", None, "eth1"), nic("mlx5_1", None, "eth2")], devices)
    assert found.devices == {}
    assert found.skipped == ["device dra.net/n/both matches several NICs (mlx5_0, mlx5_1)"]


def test_old_generations_do_not_count() -> None:
    old = resource_slice("n", "d", [{"name": "a"}], name="old", generation=1)
    new = resource_slice("n", "d", [{"name": "b"}], name="new", generation=2)
    assert [d.id for d in node_devices([new, old]).devices] == [DeviceId("d", "n", "b")]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"spec": None}, "spec: expected an object, got nothing"),
        ({"spec": {"driver": "", "pool": {}}}, "spec.driver: expected a non-empty string, got ''"),
        (
            {"spec": {"driver": "d", "pool": {"name": "p", "generation": "1"}}},
            "spec.pool.generation: expected an integer, got '1'",
        ),
        (
            {"spec": {"driver": "d", "pool": {"name": "p"}, "devices": {}}},
            "spec.devices: expected a list, got dict",
        ),
        (
            {
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "devices": [{"name": "x", "attributes": {"a": {"string": "s", "int": 1}}}],
                }
            },
            'spec.devices[0].attributes["a"]: expected exactly one of string, int, bool, version, '
            "got ['int', 'string']",
        ),
        (
            {
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "devices": [{"name": "x", "attributes": {"pciAddress": {"string": "eth0"}}}],
                }
            },
            "spec.devices[0]: a PCI address attribute is not DDDD:BB:DD.F",
        ),
    ],
)
def test_a_slice_is_refused_with_the_field(change: dict[str, object], problem: str) -> None:
    with pytest.raises(SliceError) as e:
        read_slice({"metadata": {"name": "s"}, **change})
    assert str(e.value) == f"ResourceSlice s: {problem}"


def test_pci_addresses() -> None:
    assert pci_address("C8:00.0") == "0000:c8:00.0"
    assert pci_address("0101:00:00.0") == "0101:00:00.0"
    assert pci_address("eth0") is None
    assert pci_address("zz:00.0") is None
