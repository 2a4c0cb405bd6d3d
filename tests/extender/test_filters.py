"""Each filter, table-driven on realistic topology documents: the exact verdict and reason."""

from __future__ import annotations

import pytest

from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.filters import Verdict
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core.topology import Gdr
from testbed.builders import nodes

Json = dict[str, object]

NODES = [
    nodes.node("eth-ok", nodes.hgx()),
    nodes.node("eth-rail3-down", nodes.hgx(down=(3,))),
    nodes.node("eth-flaky5", nodes.hgx(flaky=(5,))),
    nodes.node("eth-200g", nodes.hgx(rate=200.0)),
    nodes.node("ib-ok", nodes.hgx(link_layer="InfiniBand")),
    nodes.node("shared-nics", nodes.hgx(shared=True)),
    nodes.node("small", nodes.hgx(gpus=4), gpus=4, rdma={"rdma/hca": 4}),
    nodes.node("no-agent", None),
    nodes.node("bad-doc", '{"version": 7}'),
    nodes.node("per-rail", nodes.hgx(), rdma={f"rdma/hca{i}": 1 for i in range(1, 9)}),
    nodes.node("busy", nodes.hgx()),
    nodes.node("peermem", nodes.hgx(gdr=nodes.PEERMEM)),
    nodes.node("dmabuf", nodes.hgx(gdr=Gdr(peermem=False, dmabuf=True))),
    nodes.node("no-gdr", nodes.hgx(gdr=nodes.NO_GDR)),
    nodes.node("busy-no-gdr", nodes.hgx(gdr=nodes.NO_GDR)),
    nodes.node("busy-peermem", nodes.hgx(gdr=nodes.PEERMEM)),
    nodes.node("gpu2-gen4", nodes.hgx(gpu_links={2: nodes.trained(speed_gts=16.0)})),
]
BUSY = [
    nodes.pod(f"on-{name}", gpus=6, rdma={"rdma/hca": 6}, node_name=name, phase="Running")
    for name in ("busy", "busy-no-gdr", "busy-peermem")
]

ETH8 = nodes.pod("eth8")
IB8 = nodes.pod("ib8", network="ib")
PIX8 = nodes.pod("pix8", annotations={"kube-rdma.io/min-affinity": "PIX"})
FAST8 = nodes.pod("fast8", annotations={"kube-rdma.io/min-rate-gbps": "400"})
RAILS2 = nodes.pod("rails2", gpus=2, annotations={"kube-rdma.io/rails": "2"})
PER_RAIL = nodes.pod("per-rail", rdma={f"rdma/hca{i}": 1 for i in range(1, 9)})
PLAIN = nodes.pod("cpu-only", gpus=0, rdma={}, network=None)
BAD = nodes.pod("bad", annotations={"kube-rdma.io/min-affinity": "CLOSE"})
GDR8 = nodes.pod("gdr8", annotations={"kube-rdma.io/require-gdr": "true"})
NO_GDR8 = nodes.pod("no-gdr8", annotations={"kube-rdma.io/require-gdr": "False"})
BAD_GDR = nodes.pod("bad-gdr", annotations={"kube-rdma.io/require-gdr": "yes"})
GDR_ONLY = nodes.pod(
    "gdr-only", gpus=0, rdma={}, network=None, annotations={"kube-rdma.io/require-gdr": "TRUE"}
)
NO_PATH = (
    "no GPUDirect RDMA: nvidia_peermem is not loaded and there is no dma-buf path; load "
    "nvidia_peermem (modprobe nvidia_peermem, or the GPU Operator's driver.rdma.enabled=true), "
    "or run the NVIDIA open kernel module on Linux 5.12 or newer for dma-buf"
)

PASS = Verdict(True)


def never(reason: str) -> Verdict:
    return Verdict(False, reason, resolvable=False)


def later(reason: str) -> Verdict:
    return Verdict(False, reason, resolvable=True)


CASES = [
    ("eth8", ETH8, "eth-ok", PASS),
    (
        "eth8",
        ETH8,
        "eth-rail3-down",
        never("rails down: mlx5_3; 7 of 8 Ethernet ports usable, pod needs 8"),
    ),
    (
        "eth8",
        ETH8,
        "eth-flaky5",
        never("rails down: mlx5_5; 7 of 8 Ethernet ports usable, pod needs 8"),
    ),
    ("eth8", ETH8, "ib-ok", never("node has 0 Ethernet RDMA ports, pod needs 8 rails")),
    ("eth8", ETH8, "small", never("nvidia.com/gpu: node has 4, pod needs 8")),
    (
        "eth8",
        ETH8,
        "no-agent",
        never(
            "no RDMA topology: no kube-rdma.io/topology annotation "
            "(is the kube-rdma agent running there?)"
        ),
    ),
    ("eth8", ETH8, "shared-nics", never("node has 4 Ethernet RDMA ports, pod needs 8 rails")),
    ("eth8", ETH8, "busy", later("nvidia.com/gpu: 2 of 8 free, pod needs 8")),
    ("ib8", IB8, "ib-ok", PASS),
    ("ib8", IB8, "eth-ok", never("node has 0 InfiniBand RDMA ports, pod needs 8 rails")),
    ("pix8", PIX8, "eth-ok", PASS),
    (
        "pix8",
        PIX8,
        "eth-rail3-down",
        never("rails down: mlx5_3; 7 of 8 Ethernet ports usable, pod needs 8"),
    ),
    (
        "fast8",
        FAST8,
        "eth-200g",
        never("0 of 8 Ethernet ports usable at 400 Gb/s or faster, pod needs 8"),
    ),
    ("fast8", FAST8, "eth-ok", PASS),
    ("rails2", RAILS2, "eth-rail3-down", PASS),
    ("rails2", RAILS2, "shared-nics", PASS),
    ("per-rail", PER_RAIL, "per-rail", PASS),
    ("per-rail", PER_RAIL, "eth-ok", never("rdma/hca1: node has 0, pod needs 1")),
    ("cpu-only", PLAIN, "no-agent", PASS),
    (
        "cpu-only",
        PLAIN,
        "not-a-node",
        later("node is not in the extender's cache yet (just added?); it is retried"),
    ),
    (
        "bad-annotation",
        BAD,
        "eth-ok",
        never("kube-rdma.io/min-affinity='CLOSE' is not one of PIX, PXB, PHB, NODE, SYS"),
    ),
    ("gdr8", GDR8, "peermem", PASS),
    ("gdr8", GDR8, "dmabuf", PASS),
    ("gdr8", GDR8, "no-gdr", never(NO_PATH)),
    # unresolvable while busy too: preempting the running pod could never make room
    ("gdr8", GDR8, "busy-no-gdr", never(NO_PATH)),
    ("gdr8", GDR8, "busy-peermem", later("nvidia.com/gpu: 2 of 8 free, pod needs 8")),
    (
        "gdr8",
        GDR8,
        "eth-ok",
        never(
            "GPUDirect RDMA unknown: the node's kube-rdma.io/topology document does not report "
            "it (an older kube-rdma agent, or one that cannot read sysfs); upgrade the agent or "
            "mount the host's /sys"
        ),
    ),
    (
        "gdr8",
        GDR8,
        "no-agent",
        never(
            "GPUDirect RDMA unknown: no kube-rdma.io/topology annotation "
            "(is the kube-rdma agent running there?)"
        ),
    ),
    ("gdr-only", GDR_ONLY, "no-gdr", never(NO_PATH)),
    ("gdr-only", GDR_ONLY, "dmabuf", PASS),
    ("no-gdr8", NO_GDR8, "no-gdr", PASS),
    (
        "bad-gdr",
        BAD_GDR,
        "no-gdr",
        never('kube-rdma.io/require-gdr=\'yes\' is not "true" or "false"'),
    ),
    # the filter judges the wiring: a GPU whose link trained down keeps its PIX NIC
    ("pix8", PIX8, "gpu2-gen4", PASS),
]


@pytest.fixture(scope="module")
def engine() -> Engine:
    cluster = Cluster()
    cluster.replace_nodes(NODES)
    cluster.replace_pods(BUSY)
    return Engine(cluster, lambda: DEFAULT)


@pytest.mark.parametrize(
    ("pod", "node", "verdict"), [c[1:] for c in CASES], ids=[f"{c[0]}@{c[2]}" for c in CASES]
)
def test_verdict(engine: Engine, pod: Json, node: str, verdict: Verdict) -> None:
    assert engine.verdict(pod_view(pod), node) == verdict


def test_malformed_document_reason(engine: Engine) -> None:
    verdict = engine.verdict(pod_view(ETH8), "bad-doc")
    assert verdict.resolvable is False
    assert verdict.reason.startswith(
        "no RDMA topology: malformed kube-rdma.io/topology annotation: "
    )


def test_affinity_reason_names_the_down_rail() -> None:
    cluster = Cluster()
    # A board where NIC 3 is down but 8 rails exist via a 9th NIC: ports suffice, PIX does not.
    cluster.replace_nodes([nodes.node("nine", nodes.hgx(down=(3,), nics=9))])
    engine = Engine(cluster, lambda: DEFAULT)
    assert engine.verdict(pod_view(PIX8), "nine") == never(
        "rail mlx5_3 down: 7 of 8 GPUs have a PIX NIC of their own, pod needs 8"
    )
    assert engine.verdict(pod_view(ETH8), "nine") == PASS
