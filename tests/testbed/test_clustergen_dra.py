"""clustergen's DRA form: every device through DRA, or the GPUs only (the RDMA NICs left to their
device plugin, as a cluster moving GPU drivers first has them)."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.clustergen.dra import dra_form


@pytest.mark.parametrize(
    ("nics", "slices", "allocatable", "limits", "requests"),
    [
        (True, ["n-gpu.nvidia.com", "n-dra.net"], {}, {}, ["gpu", "nic"]),
        (False, ["n-gpu.nvidia.com"], {"rdma/hca": "1"}, {"rdma/hca": "1"}, ["gpu"]),
    ],
)
def test_the_dra_form_publishes_what_it_is_asked(
    nics: bool,
    slices: list[str],
    allocatable: dict[str, str],
    limits: dict[str, str],
    requests: list[str],
) -> None:
    node = nodes.node("n", nodes.hgx(), rdma={"rdma/hca": 1})
    pod = {"kind": "Pod", **nodes.pod("p", gpus=8, network=None)}
    objects = dra_form([node, pod], nics=nics)
    by_kind: dict[str, list[Json]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    assert [s["metadata"]["name"] for s in by_kind["ResourceSlice"]] == slices
    kept = by_kind["Node"][0]["status"]["allocatable"]
    assert {r: v for r, v in kept.items() if "/" in r} == allocatable
    converted = by_kind["Pod"][0]
    assert converted["spec"]["containers"][0]["resources"]["limits"] == limits
    (template,) = by_kind["ResourceClaimTemplate"]
    assert [r["name"] for r in template["spec"]["spec"]["devices"]["requests"]] == requests
