"""DeviceTaintRules for a DRA node's unhealthy RDMA devices, through the HTTP-level fake apiserver:
the agent's own step, sysfs trees from testbed/builders and ResourceSlices as drivers publish them.

Versions: DeviceTaintRule is resource.k8s.io/v1alpha3 in Kubernetes 1.33-1.35, v1beta2 in 1.36,
v1 in 1.37 (k8s.io/api resource/*/types.go at release-1.33..1.36 and master); its spec is
`deviceSelector {driver, pool, device}` and one `taint {key, value, effect, timeAdded}`."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from agent.dra_devices import DeviceId
from agent.dra_taints import DeviceTaints, rule_name
from agent.publisher import Agent, AgentSettings
from agent.sysfs import scan as scan_sysfs
from kube_rdma.core.topology import Topology
from testbed.builders import sysfs_tree
from testbed.builders.dra_slices import (
    DRANET,
    SRIOV,
    dranet_device,
    hgx_dranet_slice,
    hgx_nic,
    resource_slice,
)
from testbed.fakeapi import FakeApiServer, device_taint_rules

NODE = "gpu-node-1"
OTHER = "gpu-node-2"
NO_PROC = Path("/nonexistent/proc")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def settings(root: Path) -> AgentSettings:
    return AgentSettings(
        node_name=NODE,
        sysfs_root=root,
        proc_root=NO_PROC,
        recover_after=2,
        min_patch_gap=0.0,
        max_patch_gap=0.0,
    )


def scan(root: Path) -> Topology:
    return scan_sysfs(root, NO_PROC)


@pytest.fixture
async def custom(fake_api: FakeApiServer) -> AsyncIterator[Any]:
    fake_api.create("nodes", {"metadata": {"name": NODE}})
    async with fake_api.api_client() as api:
        yield client.CustomObjectsApi(api)


def agent(core_v1: Any, custom: Any, root: Path, mode: str = "auto") -> Agent:
    taints = DeviceTaints(custom, NODE, mode)  # type: ignore[arg-type]
    return Agent(core_v1, settings(root), lambda _: scan(root), device_taints=taints)


@pytest.fixture
def start(core_v1: Any, custom: Any, tmp_path: Path) -> Callable[..., Agent]:
    """A new agent (as after a restart) on the test's sysfs tree and apiserver, in `mode`."""

    def new(mode: str = "auto") -> Agent:
        return agent(core_v1, custom, tmp_path, mode)

    return new


def rules(fake_api: FakeApiServer) -> list[dict[str, Any]]:
    return [
        {"name": r["metadata"]["name"], **r["spec"]} for r in fake_api.objects("devicetaintrules")
    ]


def dranet_id(i: int) -> DeviceId:
    return DeviceId(DRANET, NODE, dranet_device(*hgx_nic(i))["name"])


def expected(i: int, value: str = "PortDown") -> dict[str, Any]:
    device = dranet_id(i)
    return {
        "name": rule_name(NODE, device),
        "deviceSelector": {"driver": DRANET, "pool": NODE, "device": device.device},
        "taint": {"key": "kube-rdma.io/rdma-unhealthy", "value": value, "effect": "NoSchedule"},
    }


@pytest.mark.parametrize("release", ["1.33", "1.36", "1.37"])
async def test_a_rule_follows_a_port_down_and_back(
    fake_api: FakeApiServer, start: Callable[..., Agent], tmp_path: Path, release: str
) -> None:
    fake_api.install("devicetaintrules", device_taint_rules(release))
    tree = sysfs_tree.hgx_8gpu_8nic(tmp_path)
    fake_api.create("resourceslices", hgx_dranet_slice(NODE))
    # Another node's slice with the same devices (were it read, every NIC would match two),
    # and another driver's device of this node named as dranet's.
    fake_api.create("resourceslices", hgx_dranet_slice(OTHER, name="other"))
    gpu = {
        "name": dranet_id(3).device,
        "attributes": {"resource.kubernetes.io/pciBusID": {"string": "0000:1c:00.0"}},
    }
    fake_api.create("resourceslices", resource_slice(NODE, "gpu.nvidia.com", [gpu]))
    the_agent = start()
    await the_agent.step()
    assert rules(fake_api) == []
    lists = [r for r in fake_api.requests if r.method == "GET" and "resourceslices" in r.path]
    assert lists == [], "a healthy node lists no slices"

    tree.port_state("mlx5_3", 1, up=False)
    await the_agent.step()
    assert rules(fake_api) == [expected(3)]
    stored = fake_api.objects("devicetaintrules")[0]
    assert stored["apiVersion"].endswith(device_taint_rules(release).api_version.split("/")[1])
    assert stored["metadata"]["labels"] == {"kube-rdma.io/device-taint-node": NODE}
    assert DNS_SUBDOMAIN.fullmatch(stored["metadata"]["name"])

    await the_agent.step()
    assert len(rules(fake_api)) == 1, "one rule per device, not one per scan"

    tree.port_state("mlx5_3", 1, up=True)
    await the_agent.step()  # recover_after=2: the first clean scan keeps it unhealthy
    assert rules(fake_api) == [expected(3, "PortUnhealthy")]
    await the_agent.step()
    assert rules(fake_api) == []


async def test_a_restarted_agent_takes_over_and_off_removes_its_rules(
    fake_api: FakeApiServer, start: Callable[..., Agent], tmp_path: Path
) -> None:
    fake_api.install("devicetaintrules", device_taint_rules("1.37"))
    sysfs_tree.hgx_8gpu_8nic(tmp_path, down={1, 6})
    fake_api.create("resourceslices", hgx_dranet_slice(NODE))
    foreign = {
        "metadata": {"name": "admin-maintenance"},
        "spec": {
            "deviceSelector": {"driver": DRANET, "pool": NODE, "device": dranet_id(2).device},
            "taint": {"key": "example.com/maintenance", "effect": "NoExecute"},
        },
    }
    fake_api.create("devicetaintrules", foreign)
    await start().step()
    assert [r["name"] for r in rules(fake_api)] == sorted(
        ["admin-maintenance", expected(1)["name"], expected(6)["name"]]
    )
    before = fake_api.version
    await start().step()
    assert fake_api.version == before, "a restarted agent finds its rules and writes nothing"

    await start("off").step()
    assert [r["name"] for r in rules(fake_api)] == ["admin-maintenance"]


async def test_a_degraded_link_and_an_sriov_vf(
    fake_api: FakeApiServer, start: Callable[..., Agent], tmp_path: Path
) -> None:
    """NIC 2 trained to x8, found by the SR-IOV driver's standard pciBusID; NIC 5 at 16 GT/s,
    published by dranet by its RDMA device only."""
    fake_api.install("devicetaintrules", device_taint_rules("1.36"))
    sysfs_tree.trained_down_hgx_node(tmp_path)
    pci2, _, _ = hgx_nic(2)
    vf = {"name": "vf-2", "attributes": {"resource.kubernetes.io/pciBusID": {"string": pci2}}}
    fake_api.create("resourceslices", resource_slice(NODE, SRIOV, [vf]))
    by_rdma = {"name": "rdma5", "attributes": {"dra.net/rdmaDevice": {"string": "mlx5_5"}}}
    fake_api.create("resourceslices", resource_slice(NODE, DRANET, [by_rdma]))
    await start().step()
    selected = sorted(
        (r["deviceSelector"]["driver"], r["deviceSelector"]["device"], r["taint"]["value"])
        for r in rules(fake_api)
    )
    assert selected == [(DRANET, "rdma5", "PCIeLinkDegraded"), (SRIOV, "vf-2", "PCIeLinkDegraded")]


async def test_bad_data_taints_nothing_else(
    fake_api: FakeApiServer,
    start: Callable[..., Agent],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every NIC down. NIC 0 is published twice (ambiguous), NIC 1's device names NIC 2's RDMA
    device (contradicts itself), NIC 3 nowhere, NIC 4 in a slice that cannot be read; NIC 5 in
    an old generation of its pool and the new one (found once, but in a pool not named after the
    node, which the agent may not taint); NIC 6 alone is tainted, and NIC 7 in a slice whose
    other device is malformed is refused with the slice."""
    fake_api.install("devicetaintrules", device_taint_rules("1.37"))
    sysfs_tree.hgx_8gpu_8nic(tmp_path, down=set(range(8)))
    pci0, _, _ = hgx_nic(0)
    pci1, _, _ = hgx_nic(1)
    twice = {"name": "zero-again", "attributes": {"dra.net/pciAddress": {"string": pci0}}}
    crossed = dranet_device(pci1, "mlx5_2")
    good = resource_slice(
        NODE, DRANET, [dranet_device(*hgx_nic(0)), twice, crossed, dranet_device(*hgx_nic(6))]
    )
    fake_api.create("resourceslices", good)
    broken = hgx_dranet_slice(NODE, name="broken", pool="p4", nics=range(4, 5))
    broken["spec"]["devices"][0]["attributes"]["dra.net/numaNode"] = {"int": "zero"}
    fake_api.create("resourceslices", broken)
    old = hgx_dranet_slice(NODE, name="old", pool="p5", nics=range(5, 6), generation=1)
    new = hgx_dranet_slice(NODE, name="new", pool="p5", nics=range(5, 6), generation=2)
    fake_api.create("resourceslices", old)
    fake_api.create("resourceslices", new)
    half = hgx_dranet_slice(NODE, name="half", pool="p7", nics=range(7, 8))
    half["spec"]["devices"].append({"attributes": {}})
    fake_api.create("resourceslices", half)
    with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
        await start().step()
    selected = sorted(
        (r["deviceSelector"]["pool"], r["deviceSelector"]["device"]) for r in rules(fake_api)
    )
    assert selected == [(NODE, dranet_id(6).device)]
    warnings = sorted(r.getMessage() for r in caplog.records)
    nowhere = "is unhealthy but matches no device of this node's ResourceSlices"
    assert warnings == [
        "scan: device taints: NIC mlx5_0 matches 2 published devices "
        f"(dra.net/{NODE}/pci-0000-18-00-0, dra.net/{NODE}/zero-again)",
        f"scan: device taints: NIC mlx5_1 {nowhere}",
        f"scan: device taints: NIC mlx5_2 {nowhere}",
        f"scan: device taints: NIC mlx5_3 {nowhere}",
        f"scan: device taints: NIC mlx5_4 {nowhere}",
        "scan: device taints: NIC mlx5_5 is unhealthy but its device dra.net/p5/pci-0000-ba-00-0 "
        "is in pool 'p5', not in the pool named after this node: the agent may not taint it "
        "(manifests/agent/devicetaintpolicy.yaml)",
        f"scan: device taints: NIC mlx5_7 {nowhere}",
        "scan: device taints: ResourceSlice broken: "
        "spec.devices[0].attributes[\"dra.net/numaNode\"].int: expected a int, got 'zero'",
        "scan: device taints: ResourceSlice half: spec.devices[1].name: expected a non-empty "
        "string, got nothing",
    ]


async def test_no_resource_in_the_cluster(
    fake_api: FakeApiServer,
    start: Callable[..., Agent],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without DeviceTaintRules served (1.34's default), auto is silent and on warns; both
    look again after the recheck."""
    sysfs_tree.hgx_8gpu_8nic(tmp_path, down={0})
    fake_api.create("resourceslices", hgx_dranet_slice(NODE))
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        await start().step()
        assert not [r for r in caplog.records if "DeviceTaintRule" in r.getMessage()]
        await start("on").step()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "--dra-device-taints on, but this cluster serves no DeviceTaintRules of resource.k8s.io "
        "(v1, v1beta2, v1alpha3): no device is tainted; looking again in 300s"
    ]


def test_rule_names_are_valid_and_distinct() -> None:
    long_node = "n" * 250
    names = {
        rule_name(NODE, DeviceId(DRANET, NODE, "pci-0000-18-00-0")),
        rule_name(NODE, DeviceId(SRIOV, NODE, "pci-0000-18-00-0")),
        rule_name(NODE, DeviceId(DRANET, "pool/with/slashes", "pci-0000-18-00-0")),
        rule_name(long_node, DeviceId(DRANET, long_node, "Dev_0")),
        rule_name("-.", DeviceId(DRANET, "p", "..")),
    }
    assert len(names) == 5
    for name in names:
        assert len(name) <= 253, name
        assert DNS_SUBDOMAIN.fullmatch(name), name


async def test_found_after_the_recheck_and_errors_retried(
    fake_api: FakeApiServer,
    core_v1: Any,
    custom: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The resource enabled while the agent runs is found at the next recheck; an apiserver
    error on a write is logged and the next scan tries again, the Node still published; a NIC
    that matched nothing is said to be over once it recovers."""
    now = [0.0]
    tree = sysfs_tree.hgx_8gpu_8nic(tmp_path, down={3})
    fake_api.create("resourceslices", hgx_dranet_slice(NODE, nics=range(3)))
    taints = DeviceTaints(custom, NODE, "auto", clock=lambda: now[0], recheck=60)
    the_agent = Agent(core_v1, settings(tmp_path), lambda _: scan(tmp_path), device_taints=taints)
    await the_agent.step()
    fake_api.install("devicetaintrules", device_taint_rules("1.37"))
    now[0] = 30
    await the_agent.step()
    assert fake_api.objects("devicetaintrules") == []

    fake_api.delete("resourceslices", f"{NODE}-{DRANET}-x7k2p")
    fake_api.create("resourceslices", hgx_dranet_slice(NODE))
    fake_api.fail("POST", "/apis/resource.k8s.io/v1/devicetaintrules", 500)
    now[0] = 61
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        await the_agent.step()
        assert fake_api.objects("devicetaintrules") == []
        labels = fake_api.get("nodes", NODE)["metadata"]["labels"]
        assert labels == {"kube-rdma.io/rdma-ready": "true"}, "the Node is published all the same"
        await the_agent.step()
        assert rules(fake_api) == [expected(3)]

        fake_api.delete("resourceslices", f"{NODE}-{DRANET}-x7k2p")
        await the_agent.step()
        assert rules(fake_api) == [], "a device no longer published loses its rule"
        tree.port_state("mlx5_3", 1, up=True)
        for _ in range(2):
            await the_agent.step()
    messages = [r.getMessage() for r in caplog.records if "device taints" in r.getMessage()]
    assert messages[0] == "device taints: DeviceTaintRules of resource.k8s.io/v1"
    assert messages[1].startswith("device taints: create DeviceTaintRule kube-rdma-gpu-node-1-")
    assert messages[1].endswith("trying again at the next scan")
    nowhere = "NIC mlx5_3 is unhealthy but matches no device of this node's ResourceSlices"
    assert messages[2:] == [
        f"scan: device taints: {nowhere}",
        f"scan no longer: device taints: {nowhere}",
    ]


async def test_a_device_of_a_pool_not_named_after_the_node_is_not_tainted(
    fake_api: FakeApiServer,
    start: Callable[..., Agent],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The policy kube-rdma-agent-own-devices would refuse such a rule: the agent says why
    instead of failing at every scan."""
    fake_api.install("devicetaintrules", device_taint_rules("1.37"))
    tree = sysfs_tree.hgx_8gpu_8nic(tmp_path)
    fake_api.create("resourceslices", hgx_dranet_slice(NODE, pool="rack-7"))
    the_agent = start()
    tree.port_state("mlx5_3", 1, up=False)
    with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
        await the_agent.step()
    assert rules(fake_api) == []
    said = [r.getMessage() for r in caplog.records]
    assert any(
        "in pool 'rack-7', not in the pool named after this node" in line for line in said
    ), said
