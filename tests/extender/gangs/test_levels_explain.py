"""explain over HTTP on an NVL72-style cluster labelled by Topograph v1: the levels in use, what
the gang asks, and its plan's domain at every level; a gang refused at once is told why in the
filter's answer and in explain, and never waits for room; a gang that needs the NVLink domain
where no node carries one is told which labels were looked for."""

from __future__ import annotations

from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from kube_rdma.core import keys
from testbed.clustergen.vocabularies import CLUSTER_UUID, nvl72, relabel
from tests.extender.gangs import test_gangs_http
from tests.extender.gangs.fabric import gang_members
from tests.extender.gangs.test_gangs_http import Serve
from tests.extender.levels.compute_domain import TEMPLATE, dra_objects, with_channel

serve = test_gangs_http.serve
"""The real extender app over a snapshot, on a loopback port."""

TIERS = [f"fabric.topograph.run/tier-{n}" for n in range(3)]
SETTINGS = level_settings(GangSettings(), "topograph", None)
CLAIM = f"team-a/{TEMPLATE}"


async def test_explain_shows_each_level_of_a_planned_gang(serve: Serve) -> None:
    _, members = gang_members("mnnvl", 16, gpus=4, annotations={keys.TOPOLOGY_REQUIRED: "nvlink"})
    client = await serve([*relabel(nvl72(2), "topograph"), *members], SETTINGS)
    names = sorted(n["metadata"]["name"] for n in nvl72(2))
    filtered = await client.filter(members[0], names)
    assert len(filtered["NodeNames"]) == 1
    async with client.session.get(f"{client.base}/explain?namespace=team-a&name=mnnvl-0") as r:
        body = await r.json()
    clique = f"{CLUSTER_UUID}.0"
    assert body["gang"]["levels"] == {
        "source": "topograph",
        "inUse": ["nvlink", *TIERS],
        "asks": "required nvlink (kube-rdma.io)",
        "domains": {
            "nvlink": [clique],
            TIERS[0]: ["leaf-000"],
            TIERS[1]: ["spine-00"],
            TIERS[2]: ["zone-0"],
        },
    }
    url = f"{client.base}/explain?namespace=team-a&name=mnnvl-0&format=table"
    async with client.session.get(url) as r:
        lines = (await r.text()).splitlines()
    assert lines[1:7] == [
        "gang team-a/mnnvl of 16 (kube-rdma.io/gang): planned in " + clique + " on 16 nodes",
        "levels (topograph): nvlink, "
        + ", ".join(TIERS)
        + "; asks: required nvlink (kube-rdma.io)",
        f"  nvlink: {clique}",
        f"  {TIERS[0]}: leaf-000",
        f"  {TIERS[1]}: spine-00",
        f"  {TIERS[2]}: zone-0",
    ]


async def test_a_refused_gang_is_told_why_and_never_waits(serve: Serve) -> None:
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "20"}
    _, members = gang_members("wide", 20, gpus=4, annotations=sliced)
    client = await serve([*relabel(nvl72(2), "topograph"), *members], SETTINGS)
    reason = (
        "gang team-a/wide requires each slice of 20 x (4 GPU, 4 rails) inside one nvlink domain: "
        f"the largest, {CLUSTER_UUID}.1, holds 18 even with nothing else running; "
        "it can never be placed"
    )
    filtered = await client.filter(members[0], ["gb-0-00", "gb-1-00"])
    assert filtered["FailedAndUnresolvableNodes"] == dict.fromkeys(["gb-0-00", "gb-1-00"], reason)
    async with client.session.get(f"{client.base}/explain?namespace=team-a&name=wide-0") as r:
        body = await r.json()
    assert (body["gang"]["plan"], body["gang"]["capacity"]) == (None, reason)
    assert "waiting" not in body["gang"], "no hold or preemption can help it"


async def test_a_compute_domain_gang_on_nodes_without_nvlink_labels_is_told_so(
    serve: Serve,
) -> None:
    """The pods' ComputeDomain claim requires the NVLink domain; no node carries a label the
    levels in use name NVLink domains by, and explain says which labels were looked for."""
    nodes = relabel(nvl72(1), "topograph")
    for node in nodes:
        node["metadata"]["labels"].pop("accelerator.topograph.run/domain")
    _, members = gang_members("mnnvl", 4, gpus=4)
    members = [with_channel(m) for m in members]
    client = await serve([*nodes, *dra_objects(), *members], SETTINGS)
    labels = "topograph: accelerator.topograph.run/domain or nvidia.com/gpu.clique"
    reason = (
        "gang team-a/mnnvl requires 4 x (4 GPU, 4 rails) inside one nvlink domain for "
        f"ComputeDomain claim {CLAIM}: no node it may use carries an NVLink domain label of the "
        f"levels in use ({labels}); it can never be placed"
    )
    filtered = await client.filter(members[0], ["gb-0-00", "gb-0-01"])
    assert filtered["FailedAndUnresolvableNodes"] == dict.fromkeys(["gb-0-00", "gb-0-01"], reason)
    async with client.session.get(f"{client.base}/explain?namespace=team-a&name=mnnvl-0") as r:
        body = await r.json()
    assert body["gang"]["levels"] == {
        "source": "topograph",
        "inUse": TIERS,
        "asks": f"required nvlink (ComputeDomain claim {CLAIM})",
        "nvlink": "not in use: no node carries an NVLink domain label of the levels in use "
        f"({labels})",
    }
    assert body["gang"]["capacity"] == reason
    url = f"{client.base}/explain?namespace=team-a&name=mnnvl-0&format=table"
    async with client.session.get(url) as r:
        lines = (await r.text()).splitlines()
    assert lines[1:3] == [
        f"gang team-a/mnnvl of 4 (kube-rdma.io/gang): no plan now: {reason}",
        f"levels (topograph): {', '.join(TIERS)}; asks: required nvlink (ComputeDomain claim "
        f"{CLAIM})",
    ]
