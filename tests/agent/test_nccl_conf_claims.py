"""`kube-rdma nccl-conf` taking the pod's RDMA devices, addresses and interfaces from its
ResourceClaims' device data rather than guessing, and falling back to discovery without it.

The device metadata files follow k8s.io/dynamic-resource-allocation `api/metadata/v1alpha1`
(release-1.36): a JSON stream of DeviceMetadata, one object per API version, newest first;
`requests[].devices[]` with `driver`, `pool`, `name`, `attributes` and `networkData`
(`interfaceName`, `ips` in CIDR form, `hardwareAddress`; resource.k8s.io NetworkDeviceData)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kube_rdma_cli.dispatch import main
from testbed.builders.gid_tables import HOST_VIEW, MACVLAN, build_view
from testbed.builders.proc_net import Interface, Namespace, write_proc

PREFIX = "kube-rdma nccl-conf: "
CALICO = Namespace([Interface("eth0", ["10.244.1.7/32"])], ("eth0", "169.254.1.1"))
NET1 = Namespace(
    [Interface("eth0", ["10.244.1.7/32"]), Interface("net1", ["192.168.4.10/24"])],
    ("eth0", "169.254.1.1"),
)


def device(name: str, rdma: str | None = None, interface: str | None = None, *ips: str) -> Any:
    attributes: dict[str, Any] = {"dra.net/rdma": {"bool": rdma is not None}}
    if rdma:
        attributes["dra.net/rdmaDevice"] = {"string": rdma}
    body: dict[str, Any] = {"driver": "dra.net", "pool": "node-1", "name": name}
    body["attributes"] = attributes
    if interface or ips:
        body["networkData"] = {"interfaceName": interface, "ips": list(ips)}
    return body


def metadata(*devices: Any, newer_first: bool = True) -> str:
    """A metadata file as the kubelet plugin writes it: newest version first."""
    current = {
        "apiVersion": "metadata.resource.k8s.io/v1alpha1",
        "kind": "DeviceMetadata",
        "metadata": {"name": "claim-1", "namespace": "team-a"},
        "podClaimName": "rdma",
        "requests": [{"name": "nics", "devices": list(devices)}],
    }
    newer = current | {"apiVersion": "metadata.resource.k8s.io/v1beta1", "future": True}
    return "".join(json.dumps(o) + "\n" for o in ([newer] if newer_first else []) + [current])


def run(
    tmp: Path,
    capsys: pytest.CaptureFixture[str],
    view: str,
    namespace: Namespace,
    files: dict[str, str],
) -> tuple[int, str | None, str]:
    build_view(tmp / "sys", view)
    proc = write_proc(tmp / "proc", namespace)
    data = tmp / "dra-device-attributes" / "resourceclaimtemplates" / "rdma" / "nics"
    data.mkdir(parents=True)
    for name, text in files.items():
        (data / name).write_text(text)
    out = tmp / "nccl.conf"
    code = main(
        [
            "nccl-conf",
            *("--sysfs-root", str(tmp / "sys"), "--proc-root", str(proc)),
            *("--out", str(out), "--termination-log", str(tmp / "log")),
            *("--claim-data", str(tmp / "dra-device-attributes")),
        ]
    )
    return code, out.read_text() if out.is_file() else None, capsys.readouterr().err


def test_macvlan_rail_from_the_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The claim names mlx5_4 and its address 192.168.4.20 (GID 7); the pod's own /proc shows
    none of it (only Calico's eth0), so discovery would find nothing."""
    files = {
        "dra.net-metadata.json": metadata(device("nic-4", "mlx5_4", "net1", "192.168.4.20/24"))
    }
    code, conf, err = run(tmp_path, capsys, MACVLAN, CALICO, files)
    source = (
        "HCAs from the pod's ResourceClaim devices (dra.net/node-1/nic-4; "
        f"{tmp_path}/dra-device-attributes), GID index by their addresses, socket interfaces "
        "from their interfaces"
    )
    lines = ["NCCL_IB_GID_INDEX=7", "NCCL_IB_HCA==mlx5_4:1", "NCCL_SOCKET_IFNAME==net1"]
    assert code == 0
    assert conf == "".join(f"{line}\n" for line in [f"# {PREFIX}{source}", *lines])
    assert err == "".join(f"{PREFIX}{line}\n" for line in [source, *lines])


def test_host_view_narrowed_to_the_claimed_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pod sees the host's mlx5_0 and mlx5_1; the claim (a ResourceClaim file, whose
    status has network data but no attributes) gives it mlx5_1's interface only."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim-1"},
        "status": {
            "devices": [
                {
                    "driver": "dra.net",
                    "pool": "node-1",
                    "device": "nic-1",
                    "conditions": None,
                    "networkData": {"interfaceName": "ens2f0np0", "ips": ["192.168.2.11/24"]},
                },
                {"driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"},
            ]
        },
    }
    code, conf, _ = run(tmp_path, capsys, HOST_VIEW, CALICO, {"claim.json": json.dumps(claim)})
    assert code == 0
    assert conf is not None
    assert conf.splitlines()[1:] == [
        "NCCL_IB_GID_INDEX=3",
        "NCCL_IB_HCA==mlx5_1:1",
        "NCCL_SOCKET_IFNAME==ens2f0np0",
    ]


def test_no_network_data_uses_the_pods_addresses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"dra.net-metadata.json": metadata(device("nic-4", "mlx5_4"), newer_first=False)}
    code, conf, _ = run(tmp_path, capsys, MACVLAN, NET1, files)
    assert code == 0
    assert conf is not None
    assert conf.splitlines() == [
        f"# {PREFIX}HCAs from the pod's ResourceClaim devices (dra.net/node-1/nic-4; "
        f"{tmp_path}/dra-device-attributes), GID index by the pod's addresses, socket "
        "interfaces from the default route",
        "NCCL_IB_GID_INDEX=5",
        "NCCL_IB_HCA==mlx5_4:1",
        "NCCL_SOCKET_IFNAME==eth0",
    ]


def test_no_rdma_device_in_the_claims_falls_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"dra.net-metadata.json": metadata(device("ena-0", None, "net9", "10.9.0.2/24"))}
    code, conf, err = run(tmp_path, capsys, MACVLAN, NET1, files)
    assert code == 0
    assert conf is not None
    assert conf.splitlines()[0] == (
        f"# {PREFIX}discovered in the pod's network namespace (no RDMA device in "
        f"{tmp_path}/dra-device-attributes)"
    )
    assert conf.splitlines()[1:] == [
        "NCCL_IB_GID_INDEX=5",
        "NCCL_IB_HCA==mlx5_4:1",
        "NCCL_SOCKET_IFNAME==eth0",
    ]
    assert err.startswith(
        f"{PREFIX}claim device dra.net/node-1/ena-0 (net9, 10.9.0.2/24) is no RDMA device this "
        "pod sees\n"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not JSON: Expecting property name enclosed in double quotes (line 1)"),
        (
            json.dumps({"apiVersion": "v1", "kind": "ConfigMap"}),
            "expected DeviceMetadata of metadata.resource.k8s.io/v1alpha1 or a ResourceClaim of "
            "resource.k8s.io/v1, resource.k8s.io/v1beta2, resource.k8s.io/v1beta1, "
            "got v1 ConfigMap",
        ),
        (
            metadata(device("nic-4", "mlx5_4", "net1", "192.168.4.300/24")),
            "object 2: requests[0].devices[0].networkData.ips[0]: expected an address in CIDR "
            "form (192.0.2.5/24), got '192.168.4.300/24'",
        ),
        (
            metadata({"driver": "dra.net", "pool": "p", "name": "n", "attributes": {"x": {}}}),
            'object 2: requests[0].devices[0].attributes["x"]: expected exactly one of string, '
            "int, bool, version, got none",
        ),
    ],
)
def test_unreadable_claim_data_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    code, conf, err = run(tmp_path, capsys, MACVLAN, NET1, {"dra.net-metadata.json": text})
    path = tmp_path / "dra-device-attributes/resourceclaimtemplates/rdma/nics/dra.net-metadata.json"
    assert (code, conf) == (1, None)
    assert err == f"{PREFIX}{path}: {problem}\n"
