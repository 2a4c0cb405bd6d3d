"""The claim path end to end: the webhook's resolver init container, given by kubelet the device
metadata of the claims it names, run as `kube-rdma nccl-conf` with its own arguments.

Kubelet hands a container the CDI devices of the claims in its `resources.claims`, of the whole
claim or of the one request named (kubernetes pkg/kubelet/cm/dra/manager.go, GetResources);
the driver's device metadata files (KEP-5304, k8s.io/dynamic-resource-allocation
`api/metadata`, release-1.36) come with them, one per claim, request and driver under
/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/<pod claim>/<request>/. Here
that directory is built for what the init container names, and the resolver reads it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from testbed.builders import pods
from testbed.builders.gid_tables import MACVLAN, build_view
from testbed.builders.proc_net import Interface, Namespace, write_proc
from tests.conftest import Serve
from tests.webhook.dra import test_dra_pods as dra_pods

settings = dra_pods.settings
PREFIX = "kube-rdma nccl-conf: "
CALICO = Namespace([Interface("eth0", ["10.244.1.7/32"])], ("eth0", "169.254.1.1"))
"""The pod's own network as the resolver sees it: the cluster network only."""
NIC = {
    "driver": "dra.net",
    "pool": "node-1",
    "name": "nic-4",
    "attributes": {"dra.net/rdma": {"bool": True}, "dra.net/rdmaDevice": {"string": "mlx5_4"}},
    "networkData": {"interfaceName": "net1", "ips": ["192.168.4.20/24"]},
}
GPU = {
    "driver": "gpu.nvidia.com",
    "pool": "node-1",
    "name": "gpu-4",
    "attributes": {"type": {"string": "gpu"}},
}
DRIVER_FILES = {"nic": ("dra.net", NIC), "gpu": ("gpu.nvidia.com", GPU)}
"""What the drivers write for each request of the pod's `2-gpu-nic-aligned` claim."""


def metadata(claim: str, request: str, device: Json) -> str:
    body = {
        "apiVersion": "metadata.resource.k8s.io/v1alpha1",
        "kind": "DeviceMetadata",
        "metadata": {"name": f"llama-70b-worker-0-{claim}", "namespace": "team-a"},
        "podClaimName": claim,
        "requests": [{"name": request, "devices": [device]}],
    }
    return json.dumps(body) + "\n"


def mounted(container: Json, root: Path) -> list[str]:
    """The metadata files kubelet gives `container`: those of the requests it names."""
    found = []
    for ref in (container.get("resources") or {}).get("claims") or []:
        wanted = [ref["request"]] if ref.get("request") else list(DRIVER_FILES)
        for request in wanted:
            driver, device = DRIVER_FILES[request]
            at = Path("resourceclaimtemplates", ref["name"], request, f"{driver}-metadata.json")
            (root / at).parent.mkdir(parents=True, exist_ok=True)
            (root / at).write_text(metadata(ref["name"], request, device))
            found.append(str(at))
    return found


def run_resolver(container: Json, tmp: Path) -> tuple[int, str | None, str]:
    """The init container's own arguments, with this test's roots and output file."""
    build_view(tmp / "sys", MACVLAN)
    proc = write_proc(tmp / "proc", CALICO)
    args: list[str] = list(container["args"])
    args[args.index("--out") + 1] = str(tmp / "nccl.conf")
    code = main(
        [
            *args,
            *("--sysfs-root", str(tmp / "sys"), "--proc-root", str(proc)),
            *("--termination-log", str(tmp / "log"), "--claim-data", str(tmp / "dra")),
        ]
    )
    out, log = tmp / "nccl.conf", tmp / "log"
    return (
        code,
        out.read_text() if out.is_file() else None,
        log.read_text() if log.is_file() else "",
    )


async def resolver_of(serve: Serve, settings: Any) -> Json:
    pod = dra_pods.with_claim(
        dra_pods.worker("team-a", dra_pods.RESOLVING, gpus=0), "gpu-nic", "2-gpu-nic-aligned"
    )
    async with serve(settings) as client:
        response = await client.review(pods.request(copy.deepcopy(pod)))
    result = jsonpatch.apply_patch(pod, dra_pods.patch_of(response))
    init: Json = result["spec"]["initContainers"][0]
    return init


async def test_the_resolver_takes_the_claims_nics(
    serve: Serve, settings: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The init container names the claim's NIC request, so it gets that request's metadata
    (and not the GPU's): mlx5_4 and its address 192.168.4.20 (GID 7) on net1, which the pod's
    own /proc does not show."""
    init = await resolver_of(serve, settings)
    assert init["resources"]["claims"] == [{"name": "gpu-nic", "request": "nic"}]
    files = mounted(init, tmp_path / "dra")
    assert files == ["resourceclaimtemplates/gpu-nic/nic/dra.net-metadata.json"]
    code, conf, _ = run_resolver(init, tmp_path)
    source = (
        "HCAs from the pod's ResourceClaim devices (dra.net/node-1/nic-4; "
        f"{tmp_path}/dra), GID index by their addresses, socket interfaces from their interfaces"
    )
    assert (code, conf) == (
        0,
        f"# {PREFIX}{source}\n"
        "NCCL_IB_GID_INDEX=7\nNCCL_IB_HCA==mlx5_4:1\nNCCL_SOCKET_IFNAME==net1\n"
        "NCCL_IB_DISABLE=0\n",
    )
    assert capsys.readouterr().err.startswith(f"{PREFIX}{source}\n")


async def test_without_the_claims_the_resolver_has_only_discovery(
    serve: Serve, settings: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same init container naming no claim, as before: kubelet gives it no metadata, so
    the resolver can only discover, and the pod's own network namespace (Calico's eth0 alone)
    has no address on an RDMA port: it fails, naming what it saw."""
    init = await resolver_of(serve, settings)
    del init["resources"]["claims"]
    assert mounted(init, tmp_path / "dra") == []
    (tmp_path / "dra").mkdir()
    code, conf, log = run_resolver(init, tmp_path)
    assert (code, conf) == (1, None)
    assert log == (
        f"{PREFIX}no RDMA port carries a RoCE v2 GID of the pod's IPv4 addresses (10.244.1.7 "
        "on eth0); ports seen: mlx5_4:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: 192.168.4.11, "
        "192.168.4.10, 192.168.4.20)\n"
    )
    assert capsys.readouterr().err == log
