"""DRA pods through the webhook over HTTPS: exact JSON patches, applied with `jsonpatch`, the
result valid against the Kubernetes 1.34 schema (the first with resource.k8s.io/v1) and the
newest, and a second pass over the stored result changing nothing.

The claims, templates and classes are the published drivers' own (tests/fixtures/dra-webhook)
and kube-rdma's example template (manifests/examples/dra), served from a file as
`--dra-file` serves them; tests/webhook/dra/test_source.py reads the same from a fake apiserver.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from pathlib import Path

import jsonpatch
import kubernetes_validate
import orjson
import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.resolver_container import BASE_SETTINGS, resolver
from tests.conftest import Serve
from tests.webhook.apiserver import stored
from tests.webhook.dra.objects import device_classes, placed, template
from webhook.app import Settings
from webhook.profiles import parse_profiles

K8S_VERSIONS = ("1.34.0", "1.37.0")
PROFILES_YAML = """
defaultProfile: default
profiles:
  default: {}
  pairs:
    gid: {strategy: pod}
    dra:
      claimTemplates: {8: rdma-gpu-nic-8}
  resolving:
    gid: {strategy: pod}
  gpus-only-template:
    dra:
      claimTemplates: {8: single-gpu}
  interfaces-template:
    dra:
      claimTemplates: {8: phy-interfaces-template}
"""
PROFILES = parse_profiles(PROFILES_YAML, "test")
TEMPLATES = (
    "rdma-gpu-nic-8",
    "single-gpu",
    "single-vf",
    "2-gpu-nic-aligned",
    "1gpu-1nic",
    "mig-devices",
    "phy-interfaces-template",
)
INJECT = {"kube-rdma.io/inject": "true"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(PROFILES_YAML)
    namespaces = tmp_path / "namespaces.json"
    items = [
        {"kind": "Namespace", "metadata": {"name": "team-a"}},
        {"kind": "Namespace", "metadata": {"name": "bare"}},
        {
            "kind": "Namespace",
            "metadata": {"name": "ml-training", "labels": {"kube-rdma.io/injection": "enabled"}},
        },
    ]
    namespaces.write_text(orjson.dumps({"kind": "List", "items": items}).decode())
    objects = [
        *device_classes(),
        *(placed(template(t), ns) for t in TEMPLATES for ns in ("team-a", "ml-training")),
        placed(template("h100-4gpu-4nic-numa-aligned"), "team-a"),
    ]
    dra = tmp_path / "dra.json"
    dra.write_text(orjson.dumps({"kind": "List", "items": objects}).decode())
    return Settings(
        profiles_file=profiles, namespaces_file=namespaces, dra_file=dra, own_namespace="kube-rdma"
    )


def worker(namespace: str, annotations: Json, gpus: int = 8) -> Json:
    pod = pods.pytorchjob("worker", 0, namespace, annotations)
    if not gpus:
        for kind in ("limits", "requests"):
            del pod["spec"]["containers"][0]["resources"][kind]["nvidia.com/gpu"]
    return pod


def with_claim(pod: Json, name: str, template_name: str, request: str | None = None) -> Json:
    pod["spec"]["resourceClaims"] = [{"name": name, "resourceClaimTemplateName": template_name}]
    ref = {"name": name, **({"request": request} if request else {})}
    pod["spec"]["containers"][0]["resources"]["claims"] = [ref]
    return pod


def patch_of(response: Json) -> list[Json]:
    assert response["allowed"] is True, response
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[Json] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


def applied(profile: str = "default", digest: str = "ffbf4b31ccba") -> Json:
    record = f'{{"profile":"{profile}","hash":"{digest}","network":"ib"}}'
    return {"op": "add", "path": "/metadata/annotations/kube-rdma.io~1applied", "value": record}


def env(name: str, value: str) -> Json:
    return {
        "op": "add",
        "path": "/spec/containers/0/env/-",
        "value": {"name": name, "value": value},
    }


def add(path: str, value: object) -> Json:
    return {"op": "add", "path": path, "value": value}


PAIRS_DIGEST = "12919a421c02"
AUTO_ENV = [
    env("NCCL_IB_DISABLE", "0"),
    env("NCCL_IB_ROCE_VERSION_NUM", "2"),
    env("NCCL_IB_ADDR_FAMILY", "AF_INET"),
]
IPC_LOCK = add("/spec/containers/0/securityContext", {"capabilities": {"add": ["IPC_LOCK"]}})
SHM_MOUNT = {"name": "kube-rdma-shm", "mountPath": "/dev/shm"}
IB_MOUNT = {"name": "kube-rdma-infiniband", "mountPath": "/dev/infiniband"}
SHM = {"name": "kube-rdma-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "100Gi"}}
IB = {"name": "kube-rdma-infiniband", "hostPath": {"path": "/dev/infiniband", "type": ""}}
CONF_MOUNT = {
    "name": "kube-rdma-nccl-conf",
    "mountPath": "/etc/nccl.conf",
    "subPath": "nccl.conf",
    "readOnly": True,
}
CONF = {"name": "kube-rdma-nccl-conf", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
RESOLVER = resolver(settings=BASE_SETTINGS)
PAIR_NICS = tuple({"name": "kube-rdma-gpu-nic", "request": f"nic-{i}"} for i in range(8))
"""The resolver names the NIC requests of the attached template, not its GPUs."""
PAIRS_RESOLVER = resolver(settings=BASE_SETTINGS, claims=PAIR_NICS)
NICS_FROM_CLAIM = [
    applied(),
    *AUTO_ENV,
    IPC_LOCK,
    add("/spec/containers/0/volumeMounts", [SHM_MOUNT]),
    add("/spec/volumes", [SHM]),
]
"""A container whose NICs come from its claim: no RDMA resource, no /dev/infiniband."""
GPUS_FROM_CLAIM = [
    applied(),
    *AUTO_ENV,
    add("/spec/containers/0/resources/limits/rdma~1hca", "1"),
    add("/spec/containers/0/resources/requests/rdma~1hca", "1"),
    add("/spec/containers/0/volumeMounts", [IB_MOUNT, SHM_MOUNT]),
    IPC_LOCK,
    add("/spec/volumes", [IB, SHM]),
]
"""A container with GPUs from its claim and no NIC from one: the device-plugin RDMA resource
and /dev/infiniband, as for a container requesting nvidia.com/gpu."""
PAIRS = {"kube-rdma.io/profile": "pairs"}
ATTACHED = {"name": "kube-rdma-gpu-nic", "resourceClaimTemplateName": "rdma-gpu-nic-8"}
PAIRS_COMMON = [
    IPC_LOCK,
    add("/spec/containers/0/volumeMounts", [SHM_MOUNT, CONF_MOUNT]),
]


def attached_pod() -> Json:
    """A worker that has the template already, as the webhook's own patch leaves it."""
    pod = worker("team-a", PAIRS, gpus=0)
    pod["spec"]["resourceClaims"] = [dict(ATTACHED)]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "kube-rdma-gpu-nic"}]
    return pod


def with_rdma(pod: Json) -> Json:
    for kind in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][kind]["rdma/hca"] = "1"
    return pod


@dataclass
class Case:
    name: str
    pod: Json
    patch: list[Json]
    warnings: list[str] = field(default_factory=list)


CASES = [
    Case(
        "nics-from-an-sriov-claim",
        with_claim(worker("team-a", INJECT), "vf", "single-vf"),
        NICS_FROM_CLAIM,
    ),
    Case(
        # class dranet.net is not listed by name: read, and known by its driver dra.net
        "nics-from-one-request-of-a-dranet-claim",
        with_claim(worker("team-a", INJECT), "gpu-nic", "h100-4gpu-4nic-numa-aligned", "nic"),
        NICS_FROM_CLAIM,
    ),
    Case(
        "gpus-from-a-claim",
        with_claim(worker("team-a", INJECT, gpus=0), "gpu", "single-gpu"),
        GPUS_FROM_CLAIM,
    ),
    Case(
        "gpus-from-one-request-of-a-claim",
        with_claim(
            worker("team-a", INJECT, gpus=0), "gpu-nic", "h100-4gpu-4nic-numa-aligned", "gpu"
        ),
        GPUS_FROM_CLAIM,
    ),
    Case(
        "gpus-from-a-claim-opted-in-by-namespace",
        with_claim(worker("ml-training", {}, gpus=0), "gpu", "single-gpu"),
        [
            add("/metadata/annotations", {"kube-rdma.io/applied": applied()["value"]}),
            *GPUS_FROM_CLAIM[1:],
        ],
    ),
    Case(
        "gpus-and-nics-from-one-claim",
        with_claim(worker("team-a", INJECT, gpus=0), "gpu-nic", "2-gpu-nic-aligned"),
        NICS_FROM_CLAIM,
    ),
    Case(
        # class dra.net takes every dranet interface; the request keeps the RDMA ones
        "gpus-and-nics-from-an-oci-template",
        with_claim(worker("team-a", INJECT, gpus=0), "gpu-nic", "1gpu-1nic"),
        NICS_FROM_CLAIM,
    ),
    Case(
        # class mig.nvidia.com takes MIG slices, not whole GPUs: nothing for RDMA to do
        "mig-devices-are-not-gpus",
        with_claim(worker("team-a", INJECT, gpus=0), "mig", "mig-devices"),
        [],
        [
            "kube-rdma: no container requests nvidia.com/gpu or gets GPUs from a claim, so "
            "nothing was added; name the containers in the kube-rdma.io/containers annotation"
        ],
    ),
    Case(
        # class multinic takes every dranet interface, and the request's selector reads an
        # attribute dranet does not publish: RDMA or not is open, so the container keeps the
        # device-plugin RDMA resource its nvidia.com/gpu request gets
        "an-interface-of-any-kind-is-no-rdma-nic",
        with_claim(worker("team-a", INJECT), "phy-interfaces", "phy-interfaces-template"),
        GPUS_FROM_CLAIM,
        [
            "kube-rdma: DeviceClass multinic with a request's own selectors counts as neither "
            "GPU nor RDMA NIC: it may give RDMA NICs (dranet's ConnectX VF with RDMA) and other "
            "devices (dranet's ENA without RDMA); list it in the profile's dra.gpuClasses or "
            "dra.nicClasses to say which it gives"
        ],
    ),
    Case(
        "template-attached-by-the-profile",
        with_rdma(worker("team-a", PAIRS)),
        [
            applied("pairs", PAIRS_DIGEST),
            env("NCCL_IB_DISABLE", "0"),
            {"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
            {"op": "remove", "path": "/spec/containers/0/resources/limits/rdma~1hca"},
            {"op": "remove", "path": "/spec/containers/0/resources/requests/nvidia.com~1gpu"},
            {"op": "remove", "path": "/spec/containers/0/resources/requests/rdma~1hca"},
            add("/spec/containers/0/resources/claims", [{"name": "kube-rdma-gpu-nic"}]),
            *PAIRS_COMMON,
            add("/spec/resourceClaims", [ATTACHED]),
            add("/spec/volumes", [CONF, SHM]),
            add("/spec/initContainers", [PAIRS_RESOLVER]),
        ],
        [
            "kube-rdma: container pytorch gets its 8 GPUs and their RDMA NICs from "
            "ResourceClaimTemplate rdma-gpu-nic-8 (claim kube-rdma-gpu-nic) instead of "
            "nvidia.com/gpu, rdma/hca"
        ],
    ),
    Case(
        "template-already-attached",
        attached_pod(),
        [
            applied("pairs", PAIRS_DIGEST),
            env("NCCL_IB_DISABLE", "0"),
            *PAIRS_COMMON,
            add("/spec/volumes", [CONF, SHM]),
            add("/spec/initContainers", [PAIRS_RESOLVER]),
        ],
    ),
    Case(
        "own-claim-kept-and-no-template-attached",
        with_claim(worker("team-a", PAIRS, gpus=0), "gpu-nic", "2-gpu-nic-aligned"),
        [
            applied("pairs", PAIRS_DIGEST),
            env("NCCL_IB_DISABLE", "0"),
            *PAIRS_COMMON,
            add("/spec/volumes", [CONF, SHM]),
            add(
                "/spec/initContainers",
                [resolver(settings=BASE_SETTINGS, claims=({"name": "gpu-nic", "request": "nic"},))],
            ),
        ],
        [
            "kube-rdma: container pytorch already gets devices from the pod's own claims, so "
            "the profile's ResourceClaimTemplate was not attached"
        ],
    ),
]


RESOLVING = {"kube-rdma.io/profile": "resolving"}
RESOLVING_DIGEST = "1c792667c077"
RESOLVING_COMMON = [
    applied("resolving", RESOLVING_DIGEST),
    env("NCCL_IB_DISABLE", "0"),
    IPC_LOCK,
]
RESOLVER_CASES = [
    Case(
        # every request of the claim gives a NIC: the resolver names the claim whole
        "resolver-names-a-nic-claim",
        with_claim(worker("team-a", RESOLVING), "vf", "single-vf"),
        [
            *RESOLVING_COMMON,
            add("/spec/containers/0/volumeMounts", [SHM_MOUNT, CONF_MOUNT]),
            add("/spec/volumes", [CONF, SHM]),
            add(
                "/spec/initContainers", [resolver(settings=BASE_SETTINGS, claims=({"name": "vf"},))]
            ),
        ],
    ),
    Case(
        # the container narrows the claim to its NIC request: so does the resolver
        "resolver-names-the-nic-request-the-container-names",
        with_claim(worker("team-a", RESOLVING), "gpu-nic", "h100-4gpu-4nic-numa-aligned", "nic"),
        [
            *RESOLVING_COMMON,
            add("/spec/containers/0/volumeMounts", [SHM_MOUNT, CONF_MOUNT]),
            add("/spec/volumes", [CONF, SHM]),
            add(
                "/spec/initContainers",
                [resolver(settings=BASE_SETTINGS, claims=({"name": "gpu-nic", "request": "nic"},))],
            ),
        ],
    ),
    Case(
        # GPUs from a claim, NICs from the device plugin: the resolver names no claim
        "resolver-names-no-claim-of-gpus-only",
        with_claim(worker("team-a", RESOLVING, gpus=0), "gpu", "single-gpu"),
        [
            *RESOLVING_COMMON[:2],
            add("/spec/containers/0/resources/limits/rdma~1hca", "1"),
            add("/spec/containers/0/resources/requests/rdma~1hca", "1"),
            add("/spec/containers/0/volumeMounts", [IB_MOUNT, SHM_MOUNT, CONF_MOUNT]),
            IPC_LOCK,
            add("/spec/volumes", [IB, CONF, SHM]),
            add("/spec/initContainers", [RESOLVER]),
        ],
    ),
]


def claim_reference_errors(pod: Json) -> list[str]:
    """The apiserver's checks of every container's `resources.claims`: kubernetes
    pkg/apis/core/validation/validation.go (release-1.34), validateResourceClaimNames: a name is
    required and must be an entry of spec.resourceClaims; a name (with its request, when set)
    twice is a duplicate."""
    spec = pod["spec"]
    claims = {e["name"] for e in spec.get("resourceClaims") or []}
    errors = []
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(kind) or []):
            seen: set[str] = set()
            for j, ref in enumerate((container.get("resources") or {}).get("claims") or []):
                where = f"spec.{kind}[{i}].resources.claims[{j}]"
                key = ref["name"] + (f"/{ref['request']}" if ref.get("request") else "")
                if key in seen:
                    errors.append(f"{where}: Duplicate value: {key!r}")
                seen.add(key)
                if ref["name"] not in claims:
                    errors.append(f"{where}: Not found: {ref['name']!r}")
    return errors


async def admit(serve: Serve, settings: Settings, pod: Json) -> tuple[list[Json], list[str]]:
    """The patch and warnings for `pod`; checks that the patched pod is valid and that a second
    pass over it as stored changes nothing."""
    async with serve(settings) as client:
        response = await client.review(pods.request(pod))
        ops = patch_of(response)
        result: Json = jsonpatch.apply_patch(pod, ops)
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(result, version, strict=True)
        assert claim_reference_errors(result) == []
        again = await client.review(pods.request(stored(result), uid="second-pass"))
        assert "patch" not in again, "a second pass must not change anything"
        return ops, response.get("warnings", [])


@pytest.mark.parametrize("case", CASES + RESOLVER_CASES, ids=lambda c: c.name)
async def test_dra_pod_gets_the_exact_patch(case: Case, serve: Serve, settings: Settings) -> None:
    ops, warnings = await admit(serve, settings, copy.deepcopy(case.pod))
    assert ops == case.patch
    assert warnings == case.warnings


def test_the_attached_pod_is_what_the_webhook_leaves() -> None:
    """The "already attached" case starts from the attach case's own output."""
    first = next(c for c in CASES if c.name == "template-attached-by-the-profile")
    result = jsonpatch.apply_patch(first.pod, first.patch)
    spec = attached_pod()["spec"]
    assert result["spec"]["resourceClaims"] == spec["resourceClaims"]
    assert result["spec"]["containers"][0]["resources"] == spec["containers"][0]["resources"]


def denied(message: str) -> Json:
    return {
        "uid": "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77",
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }


async def test_a_missing_template_denies_with_how_to_provide_it(
    serve: Serve, settings: Settings
) -> None:
    async with serve(settings) as client:
        response = await client.review(pods.request(worker("bare", PAIRS)))
    assert response == denied(
        'ResourceClaimTemplate "rdma-gpu-nic-8" does not exist in namespace "bare". RDMA profile '
        '"pairs" gives pods with 8 GPUs their GPUs and RDMA NICs through it '
        "(dra.claimTemplates), and a pod can only use a template of its own namespace: ask the "
        "cluster admin to create it in bare (kube-rdma's manifests/examples/dra holds one), or "
        'opt this pod out with kube-rdma.io/inject: "false"'
    )


async def test_a_template_without_nics_denies(serve: Serve, settings: Settings) -> None:
    pod = worker("team-a", {"kube-rdma.io/profile": "gpus-only-template"})
    async with serve(settings) as client:
        response = await client.review(pods.request(pod))
    assert response == denied(
        'ResourceClaimTemplate team-a/single-gpu, which RDMA profile "gpus-only-template" '
        "attaches to pods with 8 GPUs, requests no RDMA NIC device class the profile knows "
        "(dra.gpuClasses, gpuDrivers, nicClasses, nicDrivers); fix the template or the profile"
    )


async def test_a_template_judged_with_a_warning_denies_with_the_warning(
    serve: Serve, settings: Settings
) -> None:
    """dranet's `multinic` class takes every interface: the template gives neither kind, and
    the pod is told why as well as denied."""
    pod = worker("team-a", {"kube-rdma.io/profile": "interfaces-template"})
    async with serve(settings) as client:
        response = await client.review(pods.request(pod))
    warnings = response.pop("warnings")
    assert response == denied(
        "ResourceClaimTemplate team-a/phy-interfaces-template, which RDMA profile "
        '"interfaces-template" attaches to pods with 8 GPUs, requests no GPU and no RDMA NIC '
        "device class the profile knows (dra.gpuClasses, gpuDrivers, nicClasses, nicDrivers); "
        "fix the template or the profile"
    )
    assert warnings == [
        "kube-rdma: DeviceClass multinic with a request's own selectors counts as neither GPU "
        "nor RDMA NIC: it may give RDMA NICs (dranet's ConnectX VF with RDMA) and other devices "
        "(dranet's ENA without RDMA); list it in the profile's dra.gpuClasses or "
        "dra.nicClasses to say which it gives"
    ]


async def test_a_claim_of_the_wrong_shape_is_named(serve: Serve, settings: Settings) -> None:
    """What the apiserver never sends, from a broken client: one clear answer, no crash."""
    pod = with_claim(worker("team-a", INJECT), "vf", "single-vf")
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "vf", "request": ["nic"]}]
    async with serve(settings) as client:
        response = await client.review(pods.request(pod))
    assert response == {
        "uid": "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77",
        "allowed": False,
        "status": {
            "code": 400,
            "reason": "BadRequest",
            "message": "request.object is not a Pod: spec.containers[0].resources.claims[0]."
            "request is a JSON list, expected a string",
        },
    }


async def test_bad_claim_references_are_left_to_the_apiserver(
    serve: Serve, settings: Settings
) -> None:
    """A container's reference naming no pod claim, the same reference twice, and a reference
    to a request the claim does not have: the pod's own are left as they are (the apiserver
    refuses the pod for them, naming the field), and the resolver names only the valid one, so
    the patch adds no error of its own."""
    pod = with_claim(worker("team-a", RESOLVING), "vf", "single-vf")
    own = [{"name": "vf"}, {"name": "vf"}, {"name": "ghost"}, {"name": "vf", "request": "gone"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = own
    async with serve(settings) as client:
        response = await client.review(pods.request(copy.deepcopy(pod)))
    result = jsonpatch.apply_patch(pod, patch_of(response))
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(result, version, strict=True)
    assert result["spec"]["containers"][0]["resources"]["claims"] == own
    assert result["spec"]["initContainers"][0]["resources"]["claims"] == [{"name": "vf"}]
    assert claim_reference_errors(result) == [
        "spec.containers[0].resources.claims[1]: Duplicate value: 'vf'",
        "spec.containers[0].resources.claims[2]: Not found: 'ghost'",
    ]


async def test_duplicate_pod_claim_names_do_not_break_the_review(
    serve: Serve, settings: Settings
) -> None:
    """Two spec.resourceClaims entries of one name (the apiserver refuses it: Duplicate
    spec.resourceClaims[1].name): the review answers, and the resolver names the claim once."""
    pod = with_claim(worker("team-a", RESOLVING), "vf", "single-vf")
    pod["spec"]["resourceClaims"].append({"name": "vf", "resourceClaimTemplateName": "single-gpu"})
    async with serve(settings) as client:
        response = await client.review(pods.request(copy.deepcopy(pod)))
    result = jsonpatch.apply_patch(pod, patch_of(response))
    assert [c["name"] for c in result["spec"]["initContainers"]] == ["kube-rdma-nccl-conf"]
    assert "claims" not in result["spec"]["initContainers"][0]["resources"]


async def test_claims_added_after_the_first_pass_are_named_on_reinvocation(
    serve: Serve, settings: Settings
) -> None:
    """Another webhook gives the pod its NIC claim after kube-rdma ran (reinvocationPolicy:
    IfNeeded): the second pass names it on the resolver already there, and a third changes
    nothing."""
    pod = worker("team-a", RESOLVING)
    async with serve(settings) as client:
        first = jsonpatch.apply_patch(
            pod, patch_of(await client.review(pods.request(copy.deepcopy(pod))))
        )
        assert "claims" not in first["spec"]["initContainers"][0]["resources"]
        theirs = with_claim(stored(first), "vf", "single-vf")
        ops = patch_of(await client.review(pods.request(copy.deepcopy(theirs), uid="again")))
        assert add("/spec/initContainers/0/resources/claims", [{"name": "vf"}]) in ops
        second = jsonpatch.apply_patch(theirs, ops)
        assert claim_reference_errors(second) == []
        third = await client.review(pods.request(stored(second), uid="third"))
        assert "patch" not in third
