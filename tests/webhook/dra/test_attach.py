"""The DRA parts of the pure mutation: when the profile's template is attached and when not
(and why), the profile's rails and hostPath left out for NICs from a claim, and the profile's
`dra` section validated."""

from __future__ import annotations

import copy

import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from webhook.denied import Denied
from webhook.dra.attach import Attach, template_for
from webhook.dra.kinds import DeviceKind, Devices, PodClaims
from webhook.mutate import Target, mutate
from webhook.podsecurity import Level
from webhook.profiles import ProfileError, parse_profiles

PROFILES = parse_profiles(
    """
profiles:
  default: {}
  pairs:
    dra: {claimTemplates: {8: rdma-gpu-nic-8, 4: rdma-gpu-nic-4}}
  rails:
    network: {mode: macvlan, networks: [kube-rdma/rail1, kube-rdma/rail2]}
""",
    "test",
)
PAIRS = PROFILES.profiles["pairs"]
NICS = PodClaims({"vf": {"vf": Devices(frozenset({DeviceKind.NIC}), 1)}})


def worker(gpus: int = 8) -> Json:
    pod = pods.pytorchjob("worker", 0, "team-a", {})
    for kind in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][kind]["nvidia.com/gpu"] = str(gpus)
    return pod


def nic_claim(pod: Json) -> Json:
    pod["spec"]["resourceClaims"] = [{"name": "vf", "resourceClaimTemplateName": "single-vf"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "vf"}]
    return pod


def second_gpu_container(pod: Json) -> Json:
    extra = copy.deepcopy(pod["spec"]["containers"][0])
    extra["name"] = "evaluator"
    pod["spec"]["containers"].append(extra)
    return pod


@pytest.mark.parametrize(
    ("pod", "profile", "claims", "expected"),
    [
        (
            worker(8),
            "pairs",
            PodClaims(),
            (Attach("rdma-gpu-nic-8", "pytorch", "kube-rdma-gpu-nic", 8), ""),
        ),
        (
            worker(4),
            "pairs",
            PodClaims(),
            (Attach("rdma-gpu-nic-4", "pytorch", "kube-rdma-gpu-nic", 4), ""),
        ),
        (worker(8), "default", PodClaims(), (None, "")),
        (worker(0), "pairs", PodClaims(), (None, "")),
        (
            worker(2),
            "pairs",
            PodClaims(),
            (
                None,
                "kube-rdma: container pytorch requests 2 GPUs and the profile lists "
                "ResourceClaimTemplates for 4, 8 (dra.claimTemplates), so none was attached; it "
                "keeps its device-plugin resources",
            ),
        ),
        (
            second_gpu_container(worker(8)),
            "pairs",
            PodClaims(),
            (
                None,
                "kube-rdma: 2 containers request GPUs and a claim would give them all the same "
                "devices, so the profile's ResourceClaimTemplate was not attached; they keep "
                "their device-plugin resources",
            ),
        ),
        (
            nic_claim(worker(8)),
            "pairs",
            NICS,
            (
                None,
                "kube-rdma: container pytorch already gets devices from the pod's own claims, "
                "so the profile's ResourceClaimTemplate was not attached",
            ),
        ),
    ],
    ids=[
        "8-gpus",
        "4-gpus",
        "no-templates",
        "no-gpus",
        "unlisted-count",
        "two-gpu-containers",
        "own-claim",
    ],
)
def test_template_for(
    pod: Json, profile: str, claims: PodClaims, expected: tuple[Attach | None, str]
) -> None:
    assert template_for(pod, PROFILES.profiles[profile], claims) == expected


def test_nics_from_a_claim_get_none_of_the_profiles_rails() -> None:
    out = mutate(
        nic_claim(worker(8)), "rails", PROFILES.profiles["rails"], Target("team-a", claims=NICS)
    )
    assert "k8s.v1.cni.cncf.io/networks" not in out.pod["metadata"]["annotations"]
    assert out.warnings == [
        "kube-rdma: the pod's RDMA NICs come from a DRA claim, whose driver puts them in the "
        "pod's network namespace, so the profile's Multus networks were not added"
    ]


def test_nics_from_a_claim_need_no_hostpath_under_baseline() -> None:
    """Pod Security baseline forbids hostPath and IPC_LOCK; a pod whose NICs come from a claim
    gets no hostPath, so only IPC_LOCK is in the way."""
    target = Target("locked", Level.BASELINE, claims=NICS)
    with pytest.raises(Denied) as denied:
        mutate(nic_claim(worker(8)), "default", PROFILES.default, target)
    assert str(denied.value) == (
        'namespace "locked" enforces Pod Security level "baseline", which forbids what RDMA '
        'profile "default" adds: capability IPC_LOCK. Label the namespace '
        "pod-security.kubernetes.io/enforce=privileged, or ask the admin for a profile without "
        "them (ipcLock: false, devices: plugin, hostNetwork: false) or with "
        "podSecurityConflict: skip"
    )


@pytest.mark.parametrize(
    ("dra", "message"),
    [
        ("{claimTemplates: {0: t}}", "claimTemplates[0]: a GPU count is at least 1"),
        (
            "{claimTemplates: {8: Not_A_Name}}",
            "claimTemplates[8]: 'Not_A_Name' is not a ResourceClaimTemplate name",
        ),
        ("{claimName: Bad.Name}", "claimName 'Bad.Name' is not a DNS label (a pod's claim name)"),
        ("{gpuClasses: [x..y]}", "'x..y' is not a DeviceClass or driver name (a DNS subdomain)"),
        (
            "{nicClasses: [gpu.nvidia.com]}",
            "gpu.nvidia.com listed as both GPU and RDMA NIC; a class or driver gives one kind "
            "of device",
        ),
    ],
)
def test_dra_section_errors(dra: str, message: str) -> None:
    with pytest.raises(ProfileError) as error:
        parse_profiles(f"profiles:\n  default:\n    dra: {dra}\n", "p.yaml")
    assert message in str(error.value)


def test_node_strategy_with_claim_templates_loads_with_a_warning() -> None:
    profiles = parse_profiles(
        "profiles:\n  default:\n    gid: {strategy: node}\n"
        "    dra: {claimTemplates: {8: rdma-gpu-nic-8}}\n",
        "p.yaml",
    )
    assert profiles.default.load_warnings == (
        "dra.claimTemplates with gid.strategy node: the NICs of the attached template come from "
        "a DRA driver that puts them in the pod's own network namespace (dranet, SR-IOV), where "
        "the node's GID index and HCA names do not apply; use strategy pod, or auto with NCCL "
        "2.21.5 or newer",
    )
