"""The JSON shape of the parts of a Pod that kube-rdma reads, checked once where a pod arrives.

The apiserver decodes every pod into its typed structs before a webhook or an extender sees it,
so a real caller never sends `"containers": [5]` or `"limits": []`. A broken or hostile client
can, and code written for real pods would then fail deep inside with an AttributeError. Checking
the shape at the boundary turns such a body into one clear answer naming the field, and lets
everything behind the boundary trust what it reads.

Only the fields kube-rdma reads are described, with the types of k8s.io/api/core/v1; every
other field is left alone. As in the Kubernetes API, `null` stands for an absent field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Schema = Any
"""A type or tuple of types (a scalar), a dict (an object's known fields), a one-item list (a
list of that), or `MapOf` (an object with string keys and values of one shape)."""


@dataclass(frozen=True)
class MapOf:
    values: Schema


QUANTITY = (str, int, float)
STRINGS = [str]
OBJECT_REF = {"name": str}
ENV_VAR = {
    "name": str,
    "value": str,
    "valueFrom": {
        "fieldRef": {"apiVersion": str, "fieldPath": str},
        "resourceFieldRef": {"containerName": str, "resource": str, "divisor": QUANTITY},
        "configMapKeyRef": {"name": str, "key": str},
        "secretKeyRef": {"name": str, "key": str},
    },
}
CONTAINER = {
    "name": str,
    "image": str,
    "command": STRINGS,
    "args": STRINGS,
    "env": [ENV_VAR],
    "envFrom": [{"prefix": str, "configMapRef": OBJECT_REF, "secretRef": OBJECT_REF}],
    "resources": {
        "limits": MapOf(QUANTITY),
        "requests": MapOf(QUANTITY),
        "claims": [{"name": str, "request": str}],
    },
    "volumeMounts": [{"name": str, "mountPath": str, "subPath": str, "readOnly": bool}],
    "securityContext": {
        "privileged": bool,
        "runAsUser": int,
        "runAsNonRoot": bool,
        "allowPrivilegeEscalation": bool,
        "capabilities": {"add": STRINGS, "drop": STRINGS},
    },
    "restartPolicy": str,
}
VOLUME = {
    "name": str,
    "emptyDir": {"medium": str, "sizeLimit": QUANTITY},
    "hostPath": {"path": str, "type": str},
}
POD = {
    "metadata": {
        "name": str,
        "generateName": str,
        "namespace": str,
        "uid": str,
        "labels": MapOf(str),
        "annotations": MapOf(str),
        "ownerReferences": [
            {"apiVersion": str, "kind": str, "name": str, "uid": str, "controller": bool}
        ],
    },
    "spec": {
        "containers": [CONTAINER],
        "initContainers": [CONTAINER],
        "resourceClaims": [
            {"name": str, "resourceClaimName": str, "resourceClaimTemplateName": str}
        ],
        "volumes": [VOLUME],
        "hostNetwork": bool,
        "nodeName": str,
        "schedulerName": str,
        "dnsPolicy": str,
        "securityContext": {"runAsUser": int, "runAsNonRoot": bool},
    },
}

_NAMES = {str: "a string", bool: "true or false", int: "an integer", float: "a number"}


def pod_problem(pod: Any) -> str | None:
    """What is wrong with `pod`'s shape, naming the field (`spec.containers[0].env`), or None."""
    found = _problem(pod, POD)
    if found is None:
        return None
    path = "".join(reversed(found.path)).lstrip(".")
    return f"{path or 'the pod'} is {found.got}, expected {found.expected}"


@dataclass
class _Wrong:
    """A field of the wrong shape; `path` is filled in from the field up, on the way out, so
    that a pod of the right shape costs no path at all."""

    got: str
    expected: str
    path: list[str]


def _problem(value: Any, schema: Schema) -> _Wrong | None:
    if isinstance(schema, dict):
        return _object_problem(value, schema)
    if isinstance(schema, list):
        return _list_problem(value, schema[0])
    if isinstance(schema, MapOf):
        return _map_problem(value, schema.values)
    return _scalar_problem(value, schema)


def _object_problem(value: Any, schema: dict[str, Schema]) -> _Wrong | None:
    if not isinstance(value, dict):
        return _wrong(value, "an object")
    for key, inner in schema.items():
        field = value.get(key)
        if field is None:  # as in the Kubernetes API, null stands for an absent field
            continue
        found = _problem(field, inner)
        if found:
            found.path.append(f".{key}")
            return found
    return None


def _list_problem(value: Any, items: Schema) -> _Wrong | None:
    if not isinstance(value, list):
        return _wrong(value, "a list")
    for index, item in enumerate(value):
        found = _present(item, items)
        if found:
            found.path.append(f"[{index}]")
            return found
    return None


def _map_problem(value: Any, values: Schema) -> _Wrong | None:
    if not isinstance(value, dict):
        return _wrong(value, "an object")
    for key, item in value.items():
        found = _present(item, values)
        if found:
            found.path.append(f"[{key!r}]")
            return found
    return None


def _present(value: Any, schema: Schema) -> _Wrong | None:
    """A list item or a map value, where null is not a value."""
    if value is None:
        return _wrong(value, _described(schema))
    return _problem(value, schema)


def _described(schema: Schema) -> str:
    if isinstance(schema, dict | MapOf):
        return "an object"
    if isinstance(schema, list):
        return "a list"
    return _expected(schema if isinstance(schema, tuple) else (schema,))


def _scalar_problem(value: Any, types: type | tuple[type, ...]) -> _Wrong | None:
    wanted = types if isinstance(types, tuple) else (types,)
    if isinstance(value, wanted) and (bool in wanted or not isinstance(value, bool)):
        return None
    return _wrong(value, _expected(wanted))


def _expected(types: tuple[type, ...]) -> str:
    return " or ".join(_NAMES.get(t, t.__name__) for t in types)


def _wrong(value: Any, expected: str) -> _Wrong:
    got = "null" if value is None else f"a JSON {_JSON_NAMES.get(type(value), 'value')}"
    return _Wrong(got, expected, [])


_JSON_NAMES = {
    dict: "object",
    list: "list",
    str: "string",
    bool: "boolean",
    int: "number",
    float: "number",
}
