"""Which devices the published drivers' classes and templates give, as the webhook reads them."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from tests.webhook.dra.objects import device_classes, example_template_list, template
from webhook.dra.kinds import (
    DeviceKind,
    Devices,
    PodClaims,
    class_drivers,
    class_kind,
    device_requests,
    request_count,
    request_devices,
)
from webhook.profiles import Dra

GPU, NIC = DeviceKind.GPU, DeviceKind.NIC
CLASSES = {c["metadata"]["name"]: c for c in device_classes()}


@pytest.mark.parametrize(
    ("name", "drivers", "kind"),
    [
        ("gpu.nvidia.com", ["gpu.nvidia.com"], GPU),
        ("mig.nvidia.com", ["gpu.nvidia.com"], GPU),
        ("vfio.gpu.nvidia.com", ["gpu.nvidia.com"], None),
        ("compute-domain-daemon.nvidia.com", ["compute-domain.nvidia.com"], None),
        ("compute-domain-default-channel.nvidia.com", ["compute-domain.nvidia.com"], None),
        ("dranet", ["dra.net"], NIC),
        ("dranet.net", ["dra.net"], NIC),
        ("dra.net", ["dra.net"], NIC),
        ("efa.networking.k8s.aws", ["dra.net"], NIC),
        ("sriovnetwork.k8snetworkplumbingwg.io", ["sriovnetwork.k8snetworkplumbingwg.io"], NIC),
        ("rdma-nic.dra.net", ["dra.net"], NIC),
    ],
)
def test_published_classes_by_default(name: str, drivers: list[str], kind: DeviceKind) -> None:
    assert class_drivers(CLASSES[name]) == drivers
    assert class_kind(name, CLASSES[name], Dra()) is kind


def test_a_gpu_driver_makes_its_classes_gpus() -> None:
    """vfio.gpu.nvidia.com is left out by default (a GPU passed through to a VM); listing the
    driver counts every class of it."""
    dra = Dra(gpu_drivers=("gpu.nvidia.com",))
    assert class_kind("vfio.gpu.nvidia.com", CLASSES["vfio.gpu.nvidia.com"], dra) is GPU


def test_a_class_not_read_is_known_by_name_only() -> None:
    assert class_kind("gpu.nvidia.com", None, Dra()) is GPU
    assert class_kind("dranet", None, Dra()) is None


KINDS = {name: class_kind(name, cls, Dra()) for name, cls in CLASSES.items()}


@pytest.mark.parametrize(
    ("name", "api_version", "expected"),
    [
        ("single-gpu", "resource.k8s.io/v1", {"gpu": Devices(frozenset({GPU}), 1)}),
        ("single-gpu", "resource.k8s.io/v1beta1", {"gpu": Devices(frozenset({GPU}), 1)}),
        (
            "h100-4gpu-4nic-numa-aligned",
            "resource.k8s.io/v1",
            {"gpu": Devices(frozenset({GPU}), 4), "nic": Devices(frozenset({NIC}), 4)},
        ),
        (
            "gpu-efa-aligned",
            "resource.k8s.io/v1",
            {"gpu": Devices(frozenset({GPU}), 1), "efa": Devices(frozenset({NIC}), 1)},
        ),
        ("single-vf", "resource.k8s.io/v1", {"vf": Devices(frozenset({NIC}), 1)}),
    ],
)
def test_published_templates(name: str, api_version: str, expected: dict[str, Devices]) -> None:
    requests = device_requests(template(name, api_version))
    assert request_devices(requests, KINDS) == expected


def test_the_example_template_gives_eight_gpus_and_eight_nics() -> None:
    (example,) = example_template_list()
    devices = request_devices(device_requests(example), KINDS)
    claims = PodClaims({"pairs": devices})
    container: Json = {"name": "c", "resources": {"claims": [{"name": "pairs"}]}}
    assert claims.of(container) == {GPU, NIC}
    assert claims.gpu_count(container) == 8
    assert claims.gpu_count({"resources": {"claims": [{"name": "pairs", "request": "nic-3"}]}}) == 0


@pytest.mark.parametrize(
    ("request_", "count"),
    [
        ({"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com"}}, 1),
        ({"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}, 4),
        ({"name": "a", "exactly": {"deviceClassName": "g", "allocationMode": "All"}}, 0),
        ({"name": "a", "deviceClassName": "gpu.nvidia.com", "count": 2}, 2),  # v1beta1
        (
            {
                "name": "a",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 8},
                    {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 2},
                ],
            },
            8,
        ),
    ],
)
def test_request_count(request_: Json, count: int) -> None:
    assert request_count(request_) == count


def test_first_available_gives_the_kinds_of_every_alternative() -> None:
    request = {
        "name": "either",
        "firstAvailable": [
            {"name": "gpu", "deviceClassName": "gpu.nvidia.com"},
            {"name": "vf", "deviceClassName": "sriovnetwork.k8snetworkplumbingwg.io"},
        ],
    }
    assert request_devices([request], KINDS) == {"either": Devices(frozenset({GPU, NIC}), 1)}


def test_claims_of_a_container() -> None:
    claims = PodClaims(
        {
            "gpu-nic": {
                "gpu": Devices(frozenset({GPU}), 4),
                "nic": Devices(frozenset({NIC}), 4),
            },
            "unknown": {},
        }
    )
    assert claims.of({"name": "none"}) == set()
    assert claims.of({"resources": {"claims": [{"name": "gpu-nic", "request": "nic"}]}}) == {NIC}
    assert claims.of({"resources": {"claims": [{"name": "gpu-nic", "request": "gone"}]}}) == set()
    assert claims.of({"resources": {"claims": [{"name": "unknown"}, {"name": "other"}]}}) == set()
    both: Json = {"resources": {"claims": [{"name": "gpu-nic"}]}}
    assert (claims.gpus(both), claims.nics(both), claims.gpu_count(both)) == (True, True, 4)
