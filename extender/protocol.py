"""The kube-scheduler extender wire protocol (k8s.io/kube-scheduler/extender/v1).

The Go structs carry no json tags, so the keys on the wire are the Go field names; Go decodes
them case-insensitively, so this module accepts any casing and always answers in PascalCase.
Nested Kubernetes objects (the Pod, a NodeList) keep their usual camelCase JSON. Answers never
carry null node lists (kube-scheduler reads two nulls as "every node failed") and name only
nodes that were sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import add
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from kube_rdma.core.objects import Json
from kube_rdma.core.podshape import pod_problem

MAX_SCORE = 10  # MaxExtenderPriority


class ProtocolError(ValueError):
    """A request body the extender cannot use; answered with HTTP 400."""


def field(obj: Mapping[str, Any], key: str) -> Any:
    """`obj[key]` matched case-insensitively, as Go's encoding/json does; None when absent."""
    if key in obj:
        return obj[key]
    wanted = key.lower()
    for name, value in obj.items():
        if name.lower() == wanted:
            return value
    return None


def _object(body: bytes, what: str) -> Json:
    if not body.strip():
        raise ProtocolError(f"empty body: expected {what} JSON")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ProtocolError(
            f"body is not JSON (line {e.lineno}, column {e.colno}): expected {what}"
        ) from e
    if not isinstance(data, dict):
        raise ProtocolError(f"body is a JSON {type(data).__name__}, expected {what} object")
    return data


@dataclass(frozen=True)
class ExtenderArgs:
    """A filter or prioritize request: the pod, and the candidate nodes by name or in full."""

    pod: Json
    names: list[str]
    nodes: list[Json] | None
    """The full Node objects when kube-scheduler sent a NodeList (not nodeCacheCapable)."""


def decode_args(body: bytes) -> ExtenderArgs:
    data = _object(body, "ExtenderArgs")
    pod = _pod(field(data, "Pod"))
    names, node_list = field(data, "NodeNames"), field(data, "Nodes")
    if names is not None:
        if not isinstance(names, list) or not _all_strings(names):
            raise ProtocolError("ExtenderArgs.NodeNames must be a list of node names")
        return ExtenderArgs(pod, names, None)
    if node_list is not None:
        items = node_list.get("items") if isinstance(node_list, dict) else None
        if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
            raise ProtocolError("ExtenderArgs.Nodes must be a NodeList with items")
        names = [_node_name(n, i) for i, n in enumerate(items)]
        return ExtenderArgs(pod, names, items)
    raise ProtocolError(
        "ExtenderArgs has neither NodeNames nor Nodes; with nodeCacheCapable: true kube-scheduler "
        "sends NodeNames, otherwise Nodes"
    )


def _pod(pod: Any) -> Json:
    """The Pod of ExtenderArgs, in the shape kube-scheduler sends; raises ProtocolError naming
    the field that is not."""
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
        raise ProtocolError("ExtenderArgs.Pod must be a Pod object with metadata")
    problem = pod_problem(pod) or _scheduling_problem(pod)
    if problem:
        raise ProtocolError(f"ExtenderArgs.Pod is not a Pod: {problem}")
    return pod


# The Pod fields the extender reads beyond those kube_rdma.core.podshape checks (what a pod
# asks of nodes, its priority, its status), as pydantic models with the types of
# k8s.io/api/core/v1. Strict: a JSON list is not an object, "1" is not a number. Every field
# may be null (absent); fields not named are left alone.


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class _Requirement(_Shape):
    key: StrictStr | None = None
    operator: StrictStr | None = None
    values: list[StrictStr] | None = None


class _Term(_Shape):
    matchExpressions: list[_Requirement] | None = None
    matchFields: list[_Requirement] | None = None


class _NodeSelector(_Shape):
    nodeSelectorTerms: list[_Term] | None = None


class _NodeAffinity(_Shape):
    requiredDuringSchedulingIgnoredDuringExecution: _NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[dict[str, Any]] | None = None


class _Affinity(_Shape):
    nodeAffinity: _NodeAffinity | None = None
    podAffinity: dict[str, Any] | None = None
    podAntiAffinity: dict[str, Any] | None = None


class _Toleration(_Shape):
    key: StrictStr | None = None
    operator: StrictStr | None = None
    value: StrictStr | None = None
    effect: StrictStr | None = None
    tolerationSeconds: StrictInt | None = None


class _Spec(_Shape):
    nodeSelector: dict[str, StrictStr] | None = None
    affinity: _Affinity | None = None
    tolerations: list[_Toleration] | None = None
    priority: StrictInt | None = None
    priorityClassName: StrictStr | None = None
    preemptionPolicy: StrictStr | None = None
    activeDeadlineSeconds: StrictInt | None = None


class _Condition(_Shape):
    type: StrictStr | None = None
    status: StrictStr | None = None


class _ClaimStatus(_Shape):
    name: StrictStr | None = None
    resourceClaimName: StrictStr | None = None


class _Status(_Shape):
    phase: StrictStr | None = None
    startTime: StrictStr | None = None
    nominatedNodeName: StrictStr | None = None
    conditions: list[_Condition] | None = None
    resourceClaimStatuses: list[_ClaimStatus] | None = None


class _Pod(_Shape):
    metadata: dict[str, Any]
    spec: _Spec | None = None
    status: _Status | None = None


_EXPECTED = {
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
}


def _scheduling_problem(pod: Json) -> str | None:
    """What is wrong with the shape of the pod's scheduling fields and status, naming the
    field (`spec.tolerations[0].key`), or None."""
    try:
        _Pod.model_validate(pod)
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        expected = _EXPECTED.get(error["type"], error["msg"])
        got = _JSON_TYPES.get(type(error["input"]), "null")
        return f"{path.lstrip('.')} is {got}, expected {expected}"
    return None


_JSON_TYPES = {
    dict: "a JSON object",
    list: "a JSON list",
    str: "a JSON string",
    bool: "a JSON boolean",
    int: "a JSON number",
    float: "a JSON number",
}


@dataclass(frozen=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def decode_binding(body: bytes) -> BindingArgs:
    data = _object(body, "ExtenderBindingArgs")
    values = {k: field(data, k) for k in ("PodName", "PodNamespace", "PodUID", "Node")}
    missing = [k for k, v in values.items() if not isinstance(v, str) or (not v and k != "PodUID")]
    if missing:
        raise ProtocolError(f"ExtenderBindingArgs needs {', '.join(missing)}")
    return BindingArgs(values["PodName"], values["PodNamespace"], values["PodUID"], values["Node"])


def filter_result(
    args: ExtenderArgs,
    passed: list[str],
    failed: Mapping[str, str],
    unresolvable: Mapping[str, str],
    error: str = "",
) -> Json:
    """ExtenderFilterResult. In NodeNames mode the passing names; in Nodes mode the passing Node
    objects as a NodeList (and their names too: a list is never harmful, a null can be). An
    `error` fails the scheduling cycle: kube-scheduler retries the pod after its backoff, where
    every node unresolvable would park it until the cluster changes."""
    result: Json = {
        "NodeNames": passed,
        "FailedNodes": _encodable(failed),
        "FailedAndUnresolvableNodes": _encodable(unresolvable),
        "Error": error,
    }
    if args.nodes is not None:
        keep = set(passed)
        items = [n for n in args.nodes if (n.get("metadata") or {}).get("name") in keep]
        result["Nodes"] = {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}
    else:
        result["Nodes"] = None
    return result


class Failures(Mapping[str, str]):
    """Failing node names and their reasons, held as the body of a JSON object (`"name":"reason"`
    entries joined by commas) made from pieces encoded when the table was built. The encoder
    sends `json` as it is; reading it as a mapping decodes it (tests, explain)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.json = b"{" + b",".join(pieces) + b"}"
        self._decoded: dict[str, str] | None = None

    def _items(self) -> dict[str, str]:
        if self._decoded is None:
            self._decoded = orjson.loads(self.json)
        return self._decoded

    def __getitem__(self, name: str) -> str:
        return self._items()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"Failures({self._items()!r})"


def _encodable(failures: Mapping[str, str]) -> object:
    """The map as orjson encodes it: a Failures table's JSON as it is, anything else as a dict."""
    return orjson.Fragment(failures.json) if isinstance(failures, Failures) else dict(failures)


def _node_name(node: Json, index: int) -> str:
    meta = node.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ProtocolError(f"ExtenderArgs.Nodes.items[{index}] has no metadata.name")
    return name


def _all_strings(names: list[Any]) -> bool:
    """Whether every item is a string: str.join refuses anything else, in one pass in C (a third
    of the time of an isinstance call per name, which shows over 5,000 names)."""
    try:
        "".join(names)
    except TypeError:
        return False
    return True


def whole_score(score: float) -> int:
    """A total as HostPriority's integer score: rounded half up, clamped to 0..MaxExtenderPriority
    (what `host_priorities` does for each host)."""
    whole = int(score + 0.5) if score > 0 else 0
    return whole if whole < MAX_SCORE else MAX_SCORE


def host_piece(host: str, score: float) -> bytes:
    """One HostPriority encoded, `{"Host":"name","Score":7}`, as `host_priorities` encodes it."""
    return b'{"Host":' + orjson.dumps(host) + b',"Score":%d}' % whole_score(score)


class HostScores:
    """A HostPriorityList held as its JSON, joined from HostPriority pieces encoded when the
    per-shape table was built (extender/answers.py); the handler sends `json` as it is."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.json = b"[" + b",".join(pieces) + b"]"

    @classmethod
    def of(cls, scores: Mapping[str, float]) -> HostScores:
        """The answer for scores given one by one (gang plans, live criteria)."""
        return cls(map(orjson.dumps, host_priorities(scores)))

    def hosts(self) -> list[Json]:
        """The list decoded, as kube-scheduler reads it (tests, the simulator)."""
        decoded: list[Json] = orjson.loads(self.json)
        return decoded


def host_priorities(scores: Mapping[str, float]) -> list[Json]:
    """HostPriorityList: integer scores (rounded half up) clamped to 0..MaxExtenderPriority."""
    if scores and min(scores.values()) > -0.5 and max(scores.values()) < MAX_SCORE + 0.5:
        # In range, rounding half up is int(score + 0.5), without a Python-level step per host.
        wholes = map(int, map(add, scores.values(), repeat(0.5)))
        return [{"Host": host, "Score": whole} for host, whole in zip(scores, wholes, strict=True)]
    result = []
    for host, score in scores.items():
        whole = int(score + 0.5) if score > 0 else 0
        result.append({"Host": host, "Score": whole if whole < MAX_SCORE else MAX_SCORE})
    return result


def binding_result(error: str = "") -> Json:
    return {"Error": error}


@dataclass(frozen=True)
class MetaVictims:
    """The pods kube-scheduler would evict on one node, by UID, and how many of those evictions
    would break a PodDisruptionBudget (MetaVictims in k8s.io/kube-scheduler/extender/v1)."""

    uids: tuple[str, ...]
    pdb_violations: int = 0


@dataclass(frozen=True)
class PreemptionArgs:
    pod: Json
    victims: dict[str, MetaVictims]
    """node -> the victims kube-scheduler chose there."""


def decode_preemption(body: bytes) -> PreemptionArgs:
    """ExtenderPreemptionArgs. A nodeCacheCapable kube-scheduler sends NodeNameToMetaVictims
    (UIDs); otherwise NodeNameToVictims with whole pods, read here for their UIDs."""
    data = _object(body, "ExtenderPreemptionArgs")
    pod = _pod(field(data, "Pod"))
    meta, full = field(data, "NodeNameToMetaVictims"), field(data, "NodeNameToVictims")
    source, what = (
        (meta, "NodeNameToMetaVictims") if meta is not None else (full, "NodeNameToVictims")
    )
    if source is None:
        return PreemptionArgs(pod, {})
    if not isinstance(source, dict):
        raise ProtocolError(f"ExtenderPreemptionArgs.{what} must be an object of node names")
    return PreemptionArgs(pod, {str(n): _victims(v, what, str(n)) for n, v in source.items()})


def _victims(value: Any, what: str, node: str) -> MetaVictims:
    if value is None:
        return MetaVictims(())
    pods = field(value, "Pods") if isinstance(value, dict) else None
    violations = field(value, "NumPDBViolations") if isinstance(value, dict) else None
    if not isinstance(pods, list | type(None)) or not isinstance(violations, int | type(None)):
        raise ProtocolError(
            f"ExtenderPreemptionArgs.{what}[{node}] must be {{Pods: [...], NumPDBViolations: n}}"
        )
    uids = []
    for pod in pods or []:
        uid = _victim_uid(pod)
        if uid is None:
            raise ProtocolError(f"ExtenderPreemptionArgs.{what}[{node}]: a victim without a UID")
        uids.append(uid)
    return MetaVictims(tuple(uids), violations or 0)


def _victim_uid(pod: Any) -> str | None:
    """A MetaPod's UID, or a whole Pod's metadata.uid."""
    if not isinstance(pod, dict):
        return None
    uid = field(pod, "UID")
    if uid is None and isinstance(pod.get("metadata"), dict):
        uid = pod["metadata"].get("uid")
    return uid if isinstance(uid, str) and uid else None


def preemption_result(victims: Mapping[str, MetaVictims]) -> Json:
    """ExtenderPreemptionResult, always in the Meta (UID) form; never a node without victims,
    on which kube-scheduler fails the whole preemption (preemption.go, callExtenders)."""
    return {
        "NodeNameToMetaVictims": {
            node: {
                "Pods": [{"UID": uid} for uid in found.uids],
                "NumPDBViolations": found.pdb_violations,
            }
            for node, found in victims.items()
            if found.uids
        }
    }
