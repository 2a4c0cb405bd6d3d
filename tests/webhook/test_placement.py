"""Profile fields for where a pod may land: the GPUDirect RDMA annotation and the required node
affinity on `kube-rdma.io/rdma-ready`.

Each case asserts the exact pod: the same pod a profile without the fields makes, plus exactly
the annotation or affinity, validated against the Kubernetes schemas; a second pass over the
result changes nothing.
"""

from __future__ import annotations

import copy

import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.webhook_cases import validate
from webhook.mutate import Mutation, Target, applied_record, mutate
from webhook.profiles import Scheduling, parse_profiles

PROFILES = parse_profiles(
    """
profiles:
  default: {}
  gdr: {schedulerName: rdma-scheduler, scheduling: {requireGdr: true}}
  ready: {scheduling: {requireRdmaReady: true}}
  mnnvl:
    schedulerName: rdma-scheduler
    scheduling: {topologyRequired: nvlink, topologyPreferred: kube-rdma.io/leaf}
""",
    "test",
)
TARGET = Target("team-a")
REQUIRE_GDR = "kube-rdma.io/require-gdr"
READY = {"key": "kube-rdma.io/rdma-ready", "operator": "In", "values": ["true"]}
H100 = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
NODE_7 = {"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [H100]}}
    ]
}
SPREAD = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "trainer"}},
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}


def trainer(annotations: Json | None = None, affinity: Json | None = None) -> Json:
    container = pods.make_container(
        "trainer", "trainer:1", resources=pods.gpu_resources(8, "200Gi")
    )
    spec: Json = {"containers": [container]}
    if affinity is not None:
        spec["affinity"] = affinity
    return pods.make_pod("trainer-0", "team-a", {}, annotations or {}, spec)


def without_placement(pod: Json, name: str) -> Json:
    """The pod as the same profile without its scheduling fields makes it."""
    profile = PROFILES.profiles[name].model_copy(update={"scheduling": Scheduling()})
    result = mutate(pod, name, profile, TARGET).pod
    result["metadata"]["annotations"]["kube-rdma.io/applied"] = applied_record(
        name, PROFILES.profiles[name]
    )
    return result


def placed(pod: Json, name: str) -> Mutation:
    """Mutate under profile `name`, and check that the result is a valid pod a second pass
    leaves as it is."""
    out = mutate(pod, name, PROFILES.profiles[name], TARGET)
    validate(out.pod)
    again = mutate(out.pod, name, PROFILES.profiles[name], TARGET)
    assert again.pod == out.pod
    return out


AFFINITY_CASES: list[tuple[str, Json | None, Json]] = [
    (
        "no-affinity",
        None,
        {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [READY]}]}}},
    ),
    (
        "own-pod-affinity-and-preferences-kept",
        {**SPREAD, "nodeAffinity": PREFERRED},
        {
            **SPREAD,
            "nodeAffinity": {
                **PREFERRED,
                REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [READY]}]},
            },
        },
    ),
    (
        "every-term-gets-it",
        {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [{"matchExpressions": [H100]}, {"matchFields": [NODE_7]}]
                }
            }
        },
        {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [H100, READY]},
                        {"matchFields": [NODE_7], "matchExpressions": [READY]},
                    ]
                }
            }
        },
    ),
    (
        "a-term-that-names-the-label-is-left-alone",
        {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": READY["key"], "operator": "Exists"}]},
                        {"matchExpressions": [H100]},
                    ]
                }
            }
        },
        {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": READY["key"], "operator": "Exists"}]},
                        {"matchExpressions": [H100, READY]},
                    ]
                }
            }
        },
    ),
    (
        "no-terms-yet",
        {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": []}}},
        {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [READY]}]}}},
    ),
]


@pytest.mark.parametrize(
    ("affinity", "expected"), [c[1:] for c in AFFINITY_CASES], ids=[c[0] for c in AFFINITY_CASES]
)
def test_require_rdma_ready_adds_the_label_to_every_required_term(
    affinity: Json | None, expected: Json
) -> None:
    pod = trainer(affinity=copy.deepcopy(affinity))
    out = placed(pod, "ready")
    want = without_placement(pod, "ready")
    want["spec"]["affinity"] = expected
    assert out.pod == want
    assert out.warnings == mutate(pod, "default", PROFILES.default, TARGET).warnings


GDR_CASES = [
    ("added", None, "true", []),
    ("already-there", "true", "true", []),
    (
        "the-pod-says-otherwise",
        "false",
        "false",
        [
            "kube-rdma: pod sets kube-rdma.io/require-gdr='false', which is kept; its profile "
            "asks for nodes with GPUDirect RDMA (scheduling.requireGdr)"
        ],
    ),
]


@pytest.mark.parametrize(
    ("own", "value", "warnings"), [c[1:] for c in GDR_CASES], ids=[c[0] for c in GDR_CASES]
)
def test_require_gdr_writes_the_annotation_the_extender_reads(
    own: str | None, value: str, warnings: list[str]
) -> None:
    pod = trainer({REQUIRE_GDR: own} if own is not None else None)
    out = placed(pod, "gdr")
    want = without_placement(pod, "gdr")
    want["metadata"]["annotations"][REQUIRE_GDR] = value
    assert out.pod == want
    assert out.warnings == warnings


def test_profiles_without_the_fields_keep_their_hash() -> None:
    plain = parse_profiles("profiles: {default: {scheduling: {}}}", "f").default
    assert plain.digest == PROFILES.default.digest == "ffbf4b31ccba"
    assert PROFILES.profiles["ready"].digest != PROFILES.default.digest


REQUIRED_LEVEL = "kube-rdma.io/topology-required"
PREFERRED_LEVEL = "kube-rdma.io/topology-preferred"
LEVEL_CASES: list[tuple[str, Json | None, Json, list[str]]] = [
    ("written", None, {REQUIRED_LEVEL: "nvlink", PREFERRED_LEVEL: "kube-rdma.io/leaf"}, []),
    (
        "the-pods-own-kept",
        {REQUIRED_LEVEL: "kube-rdma.io/spine"},
        {REQUIRED_LEVEL: "kube-rdma.io/spine", PREFERRED_LEVEL: "kube-rdma.io/leaf"},
        [
            "kube-rdma: pod sets kube-rdma.io/topology-required='kube-rdma.io/spine', which is "
            "kept; its profile asks for 'nvlink' (scheduling.topologyRequired)"
        ],
    ),
    (
        "the-same-value-quietly",
        {REQUIRED_LEVEL: "nvlink"},
        {REQUIRED_LEVEL: "nvlink", PREFERRED_LEVEL: "kube-rdma.io/leaf"},
        [],
    ),
]


@pytest.mark.parametrize(
    ("own", "written", "warnings"), [c[1:] for c in LEVEL_CASES], ids=[c[0] for c in LEVEL_CASES]
)
def test_topology_levels_write_the_annotations_the_extender_reads(
    own: Json | None, written: Json, warnings: list[str]
) -> None:
    pod = trainer(own)
    out = placed(pod, "mnnvl")
    want = without_placement(pod, "mnnvl")
    want["metadata"]["annotations"].update(written)
    assert out.pod == want
    assert out.warnings == warnings
