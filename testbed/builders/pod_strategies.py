"""Hypothesis strategies for fuzzing the webhook and the extender over HTTP.

Two kinds of input. `valid_pods` are pods the apiserver would accept, in the shapes the training
operators create (PyTorchJob, MPIJob, a Trainer v2 JobSet, Volcano, a pod with an init container
and a sidecar, a pod with hand-set RDMA plumbing), varied in the ways that steer kube-rdma: the
opt-in annotations, the namespace, GPU and RDMA requests, env, gang keys, the extender's
annotations. `mutated(document)` is any JSON document with a few of its values replaced by
arbitrary JSON or removed: what a broken or hostile client sends.

How many examples each property gets comes from the `KUBE_RDMA_FUZZ_EXAMPLES` environment
variable (`examples(default)`), so CI runs a bounded number and a longer local run is one
variable away.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import pods

NAMESPACES = ("team-a", "ml-training", "locked", "typo", "kube-system", "kube-rdma")
# Drawn from uniformly, a third of the pods would land where the webhook never looks (its own
# namespace, kube-system) and most of the rest would not opt in: few would reach the patch
# path. The namespaces that opt in or shape the patch, and the annotations that opt in, are
# drawn more often, so that most examples exercise the mutation.
WEIGHTED_NAMESPACES = ("team-a",) * 6 + ("ml-training",) * 6 + NAMESPACES[2:]
OPT_INS = ("inject",) * 4 + ("profile",) * 3 + ("no-inject", "none")
GPU_COUNTS = ("8", "8", "4", "1", "0", None)
"""GPUs per container: mostly some, since a pod with none is left alone."""
PROFILES = ("default", "rails8", "hostnet", "node", "lenient", "roce-pod", "sriov", "exclude")
RDMA_RESOURCES = ("rdma/hca", "rdma/hca1", "nvidia.com/sriov_rdma_vf", "rdma/hca_shared_devices_a")
GANG_KEYS = (keys.GANG, "scheduling.x-k8s.io/pod-group", "kueue.x-k8s.io/pod-group-name")


def _annotated(pod: Json, annotations: Json) -> Json:
    if annotations:
        metadata = pod["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    return pod


Shape = Callable[[str, Json], Json]
SHAPES: tuple[Shape, ...] = (
    lambda ns, a: pods.pytorchjob("master", 0, ns, a),
    lambda ns, a: pods.pytorchjob("worker", 2, ns, a),
    lambda ns, a: _annotated(pods.mpijob_launcher(ns), a),
    pods.mpijob_worker,
    pods.jobset_pod,
    pods.volcano_pod,
    pods.sidecar_pod,
    pods.preset_pod,
)

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["", "true", "8", "-1", "1e999999", "nvidia.com/gpu", "{", "rdma/hca"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def examples(default: int) -> int:
    """The number of examples for one property: `KUBE_RDMA_FUZZ_EXAMPLES` when set."""
    return int(os.environ.get("KUBE_RDMA_FUZZ_EXAMPLES", default))


@st.composite
def _opt_in(draw: st.DrawFn) -> Json:
    choice = draw(st.sampled_from(OPT_INS))
    if choice == "inject":
        return {keys.INJECT: draw(st.sampled_from(["true", "True"]))}
    if choice == "no-inject":
        return {keys.INJECT: "false"}
    if choice == "profile":
        return {keys.PROFILE: draw(st.sampled_from([*PROFILES, "missing"]))}
    return {}


@st.composite
def _extender_annotations(draw: st.DrawFn) -> Json:
    """What the extender reads, with values it can and cannot use (all strings: still valid)."""
    values = {
        keys.RAILS: st.sampled_from(["1", "8", "0", "65", "eight"]),
        keys.MIN_RATE: st.sampled_from(["100", "400.5", "-1", "fast", "nan"]),
        keys.MIN_AFFINITY: st.sampled_from(["PIX", "phb", "SYS", "near"]),
        keys.REQUIRE_GDR: st.sampled_from(["true", "false", "maybe"]),
        keys.APPLIED: st.sampled_from(['{"network":"ib"}', '{"network":"macvlan"}', "{", "[]"]),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(values)), unique=True, max_size=3))
    return {key: draw(values[key]) for key in chosen}


@st.composite
def _gang(draw: st.DrawFn) -> Json:
    if not draw(st.booleans()):
        return {}
    key = draw(st.sampled_from(GANG_KEYS))
    gang = {key: "llama-70b"}
    if key == keys.GANG:
        gang[keys.GANG_SIZE] = draw(st.sampled_from(["4", "1", "0", "many"]))
    return gang


def _gpu_containers(pod: Json) -> list[Json]:
    containers: list[Json] = pod["spec"]["containers"]
    return [
        c for c in containers if "nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {})
    ]


def _set_resource(container: Json, name: str, amount: str | None) -> None:
    resources = container.setdefault("resources", {})
    for kind in ("limits", "requests"):
        bucket = resources.setdefault(kind, {})
        if amount is None:
            bucket.pop(name, None)
        else:
            bucket[name] = amount


@st.composite
def _resources(draw: st.DrawFn, pod: Json) -> None:
    for container in _gpu_containers(pod):
        gpus = draw(st.sampled_from(GPU_COUNTS))
        if gpus is not None:
            _set_resource(container, "nvidia.com/gpu", gpus)
        if draw(st.booleans()):
            _set_resource(container, draw(st.sampled_from(RDMA_RESOURCES)), "1")
        if draw(st.booleans()):
            _set_resource(container, "memory", draw(st.sampled_from([None, "64Gi", "100M"])))


@st.composite
def _env(draw: st.DrawFn, pod: Json) -> None:
    names = st.sampled_from(["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "NCCL_IB_DISABLE"])
    for container in pod["spec"]["containers"]:
        if draw(st.booleans()):
            continue
        env = container.setdefault("env", [])
        taken = {e["name"] for e in env}
        for name in draw(st.lists(names, unique=True, max_size=2)):
            if name not in taken:
                env.append({"name": name, "value": draw(st.sampled_from(["mlx5_0", "1", "eth0"]))})
        if draw(st.booleans()) and "NCCL_IB_GID_INDEX" not in taken:
            path = f"metadata.annotations['{keys.GID_INDEX}']"
            env.append(
                {"name": "NCCL_IB_GID_INDEX", "valueFrom": {"fieldRef": {"fieldPath": path}}}
            )


@st.composite
def valid_pods(draw: st.DrawFn, namespaces: tuple[str, ...] = WEIGHTED_NAMESPACES) -> Json:
    """A pod the apiserver accepts, as a training operator would create it."""
    namespace = draw(st.sampled_from(namespaces))
    annotations = {**draw(_opt_in()), **draw(_extender_annotations())}
    pod = copy.deepcopy(draw(st.sampled_from(SHAPES))(namespace, annotations))
    pod["metadata"]["labels"] = {**pod["metadata"].get("labels", {}), **draw(_gang())}
    draw(_resources(pod))
    draw(_env(pod))
    if draw(st.booleans()):
        pod["metadata"]["generateName"] = pod["metadata"].pop("name")[:-1]
    if draw(st.booleans()):
        pod["metadata"]["uid"] = "3f6c2b1e-uid"
    if draw(st.booleans()):
        pod["spec"]["hostNetwork"] = draw(st.booleans())
    return pod


def slots(value: Any) -> Iterator[tuple[Any, Any]]:
    """(container, key or index) for every value inside `value`, depth first: where a mutation
    can remove or replace a value."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, inner in list(items):
        yield value, key
        yield from slots(inner)


@st.composite
def mutated(draw: st.DrawFn, document: Json, most: int = 3) -> Json:
    """`document` with one to `most` of its values replaced by arbitrary JSON or removed."""
    result = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, most))):
        places = list(slots(result))
        if not places:
            break
        parent, key = draw(st.sampled_from(places))
        if draw(st.integers(0, 3)) == 0:
            del parent[key]
        else:
            parent[key] = draw(JSON_VALUES)
    return result
