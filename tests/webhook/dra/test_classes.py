"""Which kind of device a DeviceClass gives, by its CEL: the published drivers' own classes,
quoted in tests/fixtures/dra-webhook, and the shapes the drivers' documentation shows."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.shapes import Device
from tests.webhook.dra.objects import device_classes
from webhook.dra.classes import ClassKinds, Outcome, Verdict
from webhook.dra.kinds import DeviceKind, class_selectors
from webhook.dra.representatives import EFA, ENA, GB300_GPU, MIG_DEVICE

GPU, NIC = DeviceKind.GPU, DeviceKind.NIC
CLASSES = {c["metadata"]["name"]: c for c in device_classes()}
DRANET_ANY = (
    "it may give RDMA NICs (dranet's ConnectX VF with RDMA) and other devices (dranet's ENA "
    "without RDMA)"
)
SRIOV_ANY = (
    "it may give RDMA NICs (an SR-IOV VF with RDMA) and other devices (an SR-IOV VF without RDMA)"
)


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("gpu.nvidia.com", Verdict(GPU)),
        ("mig.nvidia.com", Verdict(None)),  # a MIG slice, not a whole GPU
        ("vfio.gpu.nvidia.com", Verdict(None)),
        ("compute-domain-daemon.nvidia.com", Verdict(None)),
        ("compute-domain-default-channel.nvidia.com", Verdict(None)),
        ("dranet", Verdict(None, DRANET_ANY)),
        ("dranet.net", Verdict(None, DRANET_ANY)),
        ("dra.net", Verdict(None, DRANET_ANY)),
        ("efa.networking.k8s.aws", Verdict(NIC)),
        ("erdma.alibaba.dra.net", Verdict(NIC)),  # two selectors, both must hold
        ("sriovnetwork.k8snetworkplumbingwg.io", Verdict(None, SRIOV_ANY)),
        ("sriov-port1", Verdict(None, SRIOV_ANY)),  # an admin-set resourceName
        ("sriov-port2", Verdict(None, SRIOV_ANY)),
        ("vf-test2", Verdict(None, SRIOV_ANY)),
        ("rdma-nic.dra.net", Verdict(NIC)),
    ],
)
def test_published_classes(name: str, verdict: Verdict) -> None:
    assert ClassKinds().verdict(class_selectors(CLASSES[name])) == verdict


NVIDIA = "device.driver == 'gpu.nvidia.com'"
WHOLE_GPU = "device.attributes['gpu.nvidia.com'].type == 'gpu'"
H100 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"


@pytest.mark.parametrize(
    ("selectors", "verdict"),
    [
        pytest.param(
            ('device.driver == "gpu.nvidia.com" || device.driver == "dra.net"',),
            Verdict(
                None,
                "it may give GPUs (a GB300 GPU) and RDMA NICs (dranet's ConnectX VF with RDMA) "
                "and other devices (a MIG device)",
            ),
            id="either-of-two-drivers",
        ),
        pytest.param(
            (
                'device.driver == "sriovnetwork.k8snetworkplumbingwg.io" && device.attributes['
                '"sriovnetwork.k8snetworkplumbingwg.io"].rdmaCapable || device.driver == '
                '"dra.net" && device.attributes["dra.net"].rdma',
            ),
            Verdict(NIC),
            id="rdma-devices-of-two-drivers",
        ),
        pytest.param((NVIDIA, WHOLE_GPU, H100), Verdict(GPU), id="whole-gpus-of-one-product"),
        pytest.param(
            (f"{NVIDIA} && {H100}",),
            Verdict(
                None,
                "it may give GPUs (a gpu.nvidia.com device with type gpu) and other devices "
                "(a gpu.nvidia.com device with type mig)",
            ),
            id="a-product-takes-its-mig-devices-too",
        ),
        pytest.param(
            (
                f"{NVIDIA} && {WHOLE_GPU} && device.capacity['gpu.nvidia.com'].memory"
                ".compareTo(quantity('80Gi')) >= 0",
            ),
            Verdict(GPU),
            id="quantity-comparison-not-evaluated-here",
        ),
        pytest.param(
            ("device.attributes['gpu.nvidia.com'].tpye == 'gpu'",),
            Verdict(
                None,
                "its selectors fail to evaluate on every device kube-rdma knows (an attribute "
                "read without has() or a driver check), as kube-scheduler's allocator would",
            ),
            id="fails-everywhere",
        ),
        pytest.param(
            ("device.driver == ",),
            Verdict(
                None,
                "CEL selector 'device.driver == ' does not compile (the parser stops at column 15)",
            ),
            id="does-not-compile",
        ),
        pytest.param(
            (f"{NVIDIA} // whole GPUs only\n&& {WHOLE_GPU}",), Verdict(GPU), id="with-a-comment"
        ),
        pytest.param(('device.driver == "dra.cpu"',), Verdict(None), id="another-driver"),
        pytest.param(
            (),
            Verdict(
                None,
                "it may give GPUs (a GB300 GPU) and RDMA NICs (dranet's ConnectX VF with RDMA) "
                "and other devices (a MIG device)",
            ),
            id="no-selectors-take-every-device",
        ),
    ],
)
def test_class_shapes(selectors: tuple[str, ...], verdict: Verdict) -> None:
    assert ClassKinds().verdict(selectors) == verdict


def test_a_listed_driver_makes_every_device_of_it_that_kind() -> None:
    """`gpuDrivers: [gpu.nvidia.com]` counts MIG and vfio devices as GPUs; a driver kube-rdma
    has no device of gets one, so that its classes count."""
    kinds = ClassKinds(gpu_drivers=("gpu.nvidia.com",), nic_drivers=("nic.example.com",))
    assert kinds.verdict(class_selectors(CLASSES["mig.nvidia.com"])) == Verdict(GPU)
    assert kinds.verdict(class_selectors(CLASSES["vfio.gpu.nvidia.com"])) == Verdict(GPU)
    assert kinds.verdict(('device.driver == "nic.example.com"',)) == Verdict(NIC)


@pytest.mark.parametrize(
    ("selectors", "device", "outcome"),
    [
        ((NVIDIA, WHOLE_GPU), GB300_GPU, Outcome.ACCEPTS),
        ((NVIDIA, WHOLE_GPU), MIG_DEVICE, Outcome.REJECTS),
        ((WHOLE_GPU,), EFA, Outcome.ERRORS),  # no gpu.nvidia.com attributes at all
        ((WHOLE_GPU, 'device.driver == "gpu.nvidia.com"'), EFA, Outcome.REJECTS),
        (('device.attributes["dra.net"].ifName == "ens65"',), EFA, Outcome.ERRORS),
        (('device.attributes["dra.net"].ifName == "ens65"',), ENA, Outcome.ACCEPTS),
    ],
)
def test_outcome_of_selectors_on_one_device(
    selectors: tuple[str, ...], device: Device, outcome: Outcome
) -> None:
    """A false selector rejects whatever the others do; an error with none false is open."""
    assert ClassKinds().outcome(selectors, device) is outcome
