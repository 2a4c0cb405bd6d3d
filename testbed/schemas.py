"""JSON schemas of what kube-rdma decodes, self-contained, for generating documents from them.

Three sources. The Kubernetes API's own (Pod, Node, ...): the OpenAPI definitions that
kubernetes-validate ships per Kubernetes version as a JSON Schema 2020-12 `_definitions.json`.
AdmissionReview (admission.k8s.io/v1), which no apiserver serves and so no OpenAPI document
describes: written here after `k8s.io/api/admission/v1/types.go`. kube-rdma's own documents:
their pydantic models' `model_json_schema()`, and the HTTP descriptions in docs/api/.

The generator (schemathesis') needs a schema without `$ref`s into other files, so every
`$ref` is inlined. Recursive definitions (JSONSchemaProps in CRDs) are cut at a depth: past it,
a reference becomes `null`, which every Kubernetes field accepts. What only documents a schema
(descriptions, `x-kubernetes-*` keys, formats no generator knows) is dropped on the way.
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import BaseModel

from kube_rdma.core.objects import Json

K8S_VERSION = "1.33.0"
"""The Kubernetes version whose schemas the fuzz tests generate from (as test_fuzz.py): the
oldest kube-rdma supports."""
ROOT = Path(__file__).resolve().parent.parent
API_DOCS = ROOT / "docs" / "api"

# Keys that say nothing a generator or a validator uses.
_DROPPED = frozenset({"description", "title", "externalDocs", "example", "examples", "$comment"})
# String formats hypothesis-jsonschema knows; others ("byte", "int-or-string") are dropped.
_FORMATS = frozenset({"date-time", "date", "time", "email", "ipv4", "ipv6", "uri", "uuid"})
CUT: Json = {"type": "null"}
"""What a reference becomes past the recursion bound."""


@functools.cache
def kubernetes_definitions(version: str = K8S_VERSION) -> dict[str, Json]:
    """Every definition of the Kubernetes API at `version`, by its OpenAPI name
    (io.k8s.api.core.v1.Pod)."""
    import kubernetes_validate

    package = importlib.resources.files(kubernetes_validate)
    path = package / "kubernetes-json-schema" / f"v{version}-local" / "_definitions.json"
    definitions: dict[str, Json] = orjson.loads(path.read_bytes())["$defs"]
    return definitions


def _ref_name(ref: str) -> str:
    """The definition a `$ref` names: `#/$defs/X`, `/api/_definitions.json#/$defs/X`,
    `#/definitions/X` or `#/components/schemas/X` all name X."""
    return ref.rpartition("/")[2]


def resolved(schema: Any, definitions: dict[str, Json], max_depth: int = 2) -> Any:
    """`schema` with every `$ref` into `definitions` inlined; a definition already being
    inlined `max_depth` times on the way down becomes `CUT`."""
    return _resolve(schema, definitions, max_depth, ())


def _resolve(
    schema: Any, definitions: dict[str, Json], max_depth: int, stack: tuple[str, ...]
) -> Any:
    if isinstance(schema, list):
        return [_resolve(item, definitions, max_depth, stack) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if isinstance(ref := schema.get("$ref"), str):
        name = _ref_name(ref)
        if stack.count(name) >= max_depth:
            return dict(CUT)
        target = _resolve(definitions[name], definitions, max_depth, (*stack, name))
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not siblings:
            return target
        # A `$ref` beside other keywords (pydantic puts a default there): both hold.
        return {"allOf": [target, _resolve(siblings, definitions, max_depth, stack)]}
    result: Json = {}
    for key, value in schema.items():
        if key in _DROPPED or key.startswith("x-") or key in ("$defs", "definitions", "$schema"):
            continue
        if key == "format" and value not in _FORMATS:
            continue
        if key in ("properties", "patternProperties", "$defs"):
            result[key] = {
                name: _resolve(inner, definitions, max_depth, stack)
                for name, inner in value.items()
            }
        else:
            result[key] = _resolve(value, definitions, max_depth, stack)
    return result


def kubernetes_schema(name: str, version: str = K8S_VERSION, max_depth: int = 2) -> Json:
    """The self-contained schema of one Kubernetes definition, e.g. io.k8s.api.core.v1.Pod."""
    definitions = kubernetes_definitions(version)
    schema: Json = resolved(definitions[name], definitions, max_depth)
    return schema


POD = "io.k8s.api.core.v1.Pod"
NODE = "io.k8s.api.core.v1.Node"
NODE_LIST = "io.k8s.api.core.v1.NodeList"
_GVK = {
    "type": "object",
    "required": ["group", "version", "kind"],
    "properties": {
        "group": {"type": "string"},
        "version": {"type": "string"},
        "kind": {"type": "string"},
    },
}
_GVR = {
    "type": "object",
    "required": ["group", "version", "resource"],
    "properties": {
        "group": {"type": "string"},
        "version": {"type": "string"},
        "resource": {"type": "string"},
    },
}


def admission_review_schema(version: str = K8S_VERSION) -> Json:
    """AdmissionReview (admission.k8s.io/v1) holding a request about a Pod, after
    `k8s.io/api/admission/v1/types.go` (AdmissionReview, AdmissionRequest): `object` and
    `oldObject` are Pods (or null), userInfo is authentication.k8s.io/v1 UserInfo."""
    pod = kubernetes_schema(POD, version)
    pod_or_null = {"anyOf": [pod, {"type": "null"}]}
    request = {
        "type": "object",
        "required": ["uid", "kind", "resource", "operation", "userInfo"],
        "properties": {
            "uid": {"type": "string", "minLength": 1},
            "kind": _GVK,
            "resource": _GVR,
            "subResource": {"type": "string"},
            "requestKind": _GVK,
            "requestResource": _GVR,
            "requestSubResource": {"type": "string"},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "operation": {"enum": ["CREATE", "UPDATE", "DELETE", "CONNECT"]},
            "userInfo": kubernetes_schema("io.k8s.api.authentication.v1.UserInfo", version),
            "object": pod_or_null,
            "oldObject": pod_or_null,
            "dryRun": {"type": "boolean"},
            "options": {"type": ["object", "null"]},
        },
    }
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "request"],
        "properties": {
            "apiVersion": {"const": "admission.k8s.io/v1"},
            "kind": {"const": "AdmissionReview"},
            "request": request,
        },
    }


def model_schema(model: type[BaseModel]) -> Json:
    """A pydantic model's validation schema, by its aliases (the names on the wire), inlined."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    inlined: Json = resolved(schema, schema.get("$defs", {}))
    return inlined


@functools.cache
def _api_doc(name: str) -> Json:
    doc: Json = yaml.safe_load((API_DOCS / f"{name}.openapi.yaml").read_text())
    return doc


def openapi(name: str, version: str = K8S_VERSION) -> Json:
    """docs/api/NAME.openapi.yaml with each schema that stands for a Kubernetes definition
    (`x-kubernetes-definition: io.k8s.api.core.v1.Pod`) replaced by that definition, inlined:
    the description stays readable and the fuzzer still generates whole Pods and Nodes."""
    doc: Json = orjson.loads(orjson.dumps(_api_doc(name)))
    schemas: Json = doc.get("components", {}).get("schemas", {})
    for key, schema in schemas.items():
        definition = schema.get("x-kubernetes-definition")
        if definition == "admission.k8s.io/v1.AdmissionReview":
            schemas[key] = admission_review_schema(version)
        elif definition:
            schemas[key] = kubernetes_schema(definition, version)
    return doc


def component(name: str, schema_name: str, version: str = K8S_VERSION) -> Json:
    """One schema of docs/api/NAME.openapi.yaml, its `$ref`s inlined."""
    schemas = openapi(name, version)["components"]["schemas"]
    inlined: Json = resolved(schemas[schema_name], schemas)
    return inlined
