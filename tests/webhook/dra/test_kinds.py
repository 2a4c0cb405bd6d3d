"""Which devices the published drivers' classes and templates give, as the webhook reads them."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from tests.webhook.dra.objects import device_classes, example_template_list, template
from webhook.dra.classes import Verdict
from webhook.dra.kinds import (
    Alternative,
    DeviceKind,
    Devices,
    PodClaims,
    alternative_verdict,
    device_requests,
    request_alternatives,
    request_count,
    request_devices,
)
from webhook.profiles import Dra

GPU, NIC = DeviceKind.GPU, DeviceKind.NIC
CLASSES = {c["metadata"]["name"]: c for c in device_classes()}


def test_a_class_listed_by_name_is_not_judged() -> None:
    """Listed by name: its CEL does not matter, and it need not have been read."""
    assert alternative_verdict("gpu.nvidia.com", None, (), Dra()) == Verdict(GPU)
    dranet = CLASSES["dranet"]
    assert alternative_verdict("dranet", dranet, (), Dra(nic_classes=("dranet",))) == Verdict(NIC)
    assert alternative_verdict("dranet", None, (), Dra()) == Verdict(None)


def test_a_request_narrows_its_class() -> None:
    """dranet's `dranet` class takes every interface; its demo's request keeps the RDMA ones,
    and the two together give RDMA NICs, as the allocator applies them."""
    (_, nic) = device_requests(template("2-gpu-nic-aligned"))
    alternatives = request_alternatives(nic)
    assert alternatives == [("dranet", ('device.attributes["dra.net"].rdma == true',))]
    name, selectors = alternatives[0]
    assert alternative_verdict(name, CLASSES[name], selectors, Dra()) == Verdict(NIC)
    assert alternative_verdict(name, CLASSES[name], (), Dra()).kind is None


def kinds_of(requests: list[Json]) -> dict[Alternative, DeviceKind | None]:
    return {
        (name, selectors): alternative_verdict(name, CLASSES.get(name), selectors, Dra()).kind
        for r in requests
        for name, selectors in request_alternatives(r)
    }


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
    assert request_devices(requests, kinds_of(requests)) == expected


def test_the_example_template_gives_eight_gpus_and_eight_nics() -> None:
    (example,) = example_template_list()
    requests = device_requests(example)
    devices = request_devices(requests, kinds_of(requests))
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
    assert request_devices([request], kinds_of([request])) == {
        "either": Devices(frozenset({GPU, NIC}), 1)
    }


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


PAIRS = PodClaims(
    {
        "pairs": {
            "gpu-0": Devices(frozenset({GPU}), 1),
            "nic-0": Devices(frozenset({NIC}), 1),
            "gpu-1": Devices(frozenset({GPU}), 1),
            "nic-1": Devices(frozenset({NIC}), 1),
        },
        "vf": {"vf": Devices(frozenset({NIC}), 1)},
        "gpus": {"gpus": Devices(frozenset({GPU}), 8)},
        "missing": {},
    }
)


def refs(*claims: object) -> Json:
    return {"name": "pytorch", "resources": {"claims": list(claims)}}


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        pytest.param([{"name": "none"}], [], id="no-claims"),
        pytest.param([refs({"name": "vf"})], [{"name": "vf"}], id="a-nic-claim-whole"),
        pytest.param(
            [refs({"name": "pairs"})],
            [{"name": "pairs", "request": "nic-0"}, {"name": "pairs", "request": "nic-1"}],
            id="a-claim-of-pairs-by-its-nic-requests",
        ),
        pytest.param(
            [refs({"name": "pairs", "request": "nic-1"})],
            [{"name": "pairs", "request": "nic-1"}],
            id="the-nic-request-the-container-names",
        ),
        pytest.param([refs({"name": "pairs", "request": "gpu-0"})], [], id="a-gpu-request"),
        pytest.param([refs({"name": "gpus"})], [], id="a-gpu-claim"),
        pytest.param([refs({"name": "missing"})], [], id="a-claim-not-read"),
        # what the apiserver refuses in the container's own references gives the resolver
        # nothing, or the one valid reference once (kubernetes pkg/apis/core/validation
        # validateResourceClaimNames: a name not in spec.resourceClaims, a duplicate)
        pytest.param([refs({"name": "ghost"})], [], id="a-name-of-no-pod-claim"),
        pytest.param([refs({"name": "pairs", "request": "gone"})], [], id="a-request-not-there"),
        pytest.param(
            [refs({"name": "vf"}, {"name": "vf"}), refs({"name": "vf"})],
            [{"name": "vf"}],
            id="duplicates-once",
        ),
        pytest.param(
            [refs({"name": "pairs", "request": "nic-0"}), refs({"name": "pairs"})],
            [{"name": "pairs", "request": "nic-0"}, {"name": "pairs", "request": "nic-1"}],
            id="a-request-and-its-claim-whole",
        ),
        pytest.param(
            [refs({"name": "vf", "request": "vf"}), refs({"name": "vf"})],
            [{"name": "vf"}],
            id="the-whole-claim-covers-its-request",
        ),
        pytest.param(
            [refs({}, {"name": None}, {"name": "vf", "request": ["vf"]}, "vf", None)],
            [],
            id="malformed",
        ),
    ],
)
def test_nic_references(containers: list[Json], expected: list[Json]) -> None:
    assert PAIRS.nic_references(containers) == expected


def test_a_request_name_the_apiserver_refuses_in_a_reference_is_not_named() -> None:
    """A container's `request` must be a DNS-1123 label (validateResourceClaimNames)."""
    claims = PodClaims(
        {"odd": {"gpu": Devices(frozenset({GPU}), 1), "Nic_0": Devices(frozenset({NIC}), 1)}}
    )
    assert claims.nic_references([refs({"name": "odd"})]) == []
    assert claims.nic_references([refs({"name": "odd", "request": "Nic_0"})]) == []
