"""The devices classes are judged against: those quoted from published slices are exactly the
published ones, and each has the kind the extender gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kube_rdma.core.dra.kinds import kind_of
from kube_rdma.core.dra.shapes import Device, read_devices
from tests.webhook.dra.objects import FIXTURES
from webhook.dra import representatives as r

PUBLISHED = {
    "gb300-gpu-slices.yaml": r.GB300_GPU,
    "../dra/nvidia-gpu-slice-v1.yaml": r.A100_GPU,
    "gb300-dranet-slice.yaml": r.GB300_RDMA_VF,
    "eks-efa-dranet-slices.yaml": (r.EFA, r.ENA),
}


def published(path: Path, name: str) -> Device:
    for document in yaml.safe_load_all(path.read_text()):
        for slice_ in document.get("items") or [document]:
            for device in read_devices(slice_):
                if device.name == name:
                    return device
    raise KeyError(name)


@pytest.mark.parametrize(
    ("fixture", "device"),
    [(f, d) for f, ds in PUBLISHED.items() for d in (ds if isinstance(ds, tuple) else (ds,))],
    ids=lambda v: v if isinstance(v, str) else v.name,
)
def test_quoted_devices_are_the_published_ones(fixture: str, device: Device) -> None:
    found = published(FIXTURES / fixture, device.name)
    assert (found.driver, found.attributes, found.capacity) == (
        device.driver,
        device.attributes,
        device.capacity,
    )


def test_each_representative_has_the_extenders_kind() -> None:
    kinds = {rep.label: kind_of(rep.device) for rep in r.REPRESENTATIVES}
    assert kinds == {
        "a GB300 GPU": "gpu",
        "an A100 GPU": "gpu",
        "a MIG device": None,
        "a GPU bound to vfio-pci": None,
        "an IMEX channel": None,
        "an IMEX daemon": None,
        "dranet's ConnectX VF with RDMA": "nic",
        "dranet's EFA": "nic",
        "dranet's ENA without RDMA": None,
        "dranet's Alibaba eRDMA": "nic",
        "an SR-IOV VF with RDMA": "nic",
        "an SR-IOV VF without RDMA": None,
    }
