"""Hypothesis strategies of documents generated from a JSON schema, and mutated off it.

`from_schema(schema)` draws documents that the schema accepts. It goes through schemathesis, the
API fuzzer, whose generator takes any JSON Schema (as a request body of a one-operation OpenAPI
3.1 document: `APIOperation.as_strategy`, its public way to generate outside its own runner).

`off_schema(documents)` takes such a document and breaks it in one to three places, the ways
a broken or hostile client would: a subtree replaced by arbitrary JSON, a known field given a
value of another JSON type, an extra field, a field removed, a string made huge, a subtree
replaced by deep nesting. The sizes stay within what the servers take (a body well under the
webhook's 6 MiB, nesting well under the JSON decoders' depth limits), so that what is found is
about the decoders, not about body limits.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from kube_rdma.core.objects import Json
from testbed.builders.pod_strategies import JSON_SCALARS, JSON_VALUES, examples, slots

HUGE_STRING_CHARS = (64 << 10, 1 << 20)
"""A huge string is 64 KiB to 1 MiB long."""
DEEPEST = 200
"""Nesting depth of a deep subtree: past what any Kubernetes object has, far below the 1,024
levels orjson decodes and Python's recursion limit."""


def _operation_doc(schema: Json) -> Json:
    body = {"required": True, "content": {"application/json": {"schema": schema}}}
    operation = {"requestBody": body, "responses": {"200": {"description": "ok"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "documents", "version": "1"},
        "paths": {"/document": {"post": operation}},
    }


@functools.cache
def _cached(schema_json: bytes) -> st.SearchStrategy[Any]:
    import schemathesis

    operation = schemathesis.openapi.from_dict(_operation_doc(orjson.loads(schema_json)))
    return operation["/document"]["POST"].as_strategy().map(lambda case: case.body)


def raised(call: Callable[[], object], *allowed: type[BaseException]) -> BaseException | None:
    """What `call` raised of the `allowed` errors, None when it returned; anything else it
    raises goes on up (and fails the test)."""
    try:
        call()
    except allowed as e:
        return e
    return None


def from_schema(schema: Json) -> st.SearchStrategy[Any]:
    """Documents that `schema` (self-contained: testbed.schemas) accepts."""
    return _cached(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


def _objects(value: Any) -> Iterator[Json]:
    if isinstance(value, dict):
        yield value
    for parent, key in slots(value):
        if isinstance(parent[key], dict):
            yield parent[key]


def _other_type(value: Any) -> st.SearchStrategy[Any]:
    """A JSON value of another type than `value`."""
    kinds: dict[type, st.SearchStrategy[Any]] = {
        str: st.text(max_size=8),
        int: st.integers(-(2**70), 2**70),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
        list: st.lists(JSON_SCALARS, max_size=3),
        dict: st.dictionaries(st.text(max_size=6), JSON_SCALARS, max_size=3),
        type(None): st.none(),
    }
    own = bool if isinstance(value, bool) else type(value)
    return st.one_of([s for kind, s in kinds.items() if kind is not own])


def deep(depth: int, leaf: Any = 0) -> Any:
    """`leaf` inside `depth` levels of alternating lists and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


DEEP = st.builds(deep, st.integers(2, DEEPEST), JSON_SCALARS)
HUGE = st.builds(lambda n, c: c * n, st.integers(*HUGE_STRING_CHARS), st.sampled_from("a0/{é"))
MUTATIONS = ("replace", "retype", "extra", "remove", "huge", "deep")


@st.composite
def mutated_off(draw: st.DrawFn, document: Any, most: int = 3) -> Any:
    """`document` broken in one to `most` places (module docstring)."""
    result = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, most))):
        mutation = draw(st.sampled_from(MUTATIONS))
        if mutation == "extra":
            objects = list(_objects(result))
            if objects:
                target = draw(st.sampled_from(objects))
                target[draw(st.text(max_size=12))] = draw(JSON_VALUES | DEEP)
            continue
        places = list(slots(result))
        if not places:
            return draw(JSON_VALUES)
        parent, key = draw(st.sampled_from(places))
        if mutation == "remove":
            del parent[key]
        elif mutation == "replace":
            parent[key] = draw(JSON_VALUES)
        elif mutation == "retype":
            parent[key] = draw(_other_type(parent[key]))
        elif mutation == "huge":
            parent[key] = draw(HUGE)
        else:
            parent[key] = draw(DEEP)
    return result


def off_schema(documents: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Documents drawn from `documents`, then broken (`mutated_off`)."""
    return documents.flatmap(mutated_off)


def on_and_off(schema: Json) -> st.SearchStrategy[Any]:
    """Half documents the schema accepts, half those broken off it."""
    documents = from_schema(schema)
    return documents | off_schema(documents)


def fuzz_settings(default_examples: int) -> settings:
    """Hypothesis settings for the schema fuzz tests: `KUBE_RDMA_FUZZ_EXAMPLES` examples when
    set, else `default_examples`; derandomized with no example database, so that `make test`
    runs the same examples on every machine, every time. Without shrinking, unless
    `KUBE_RDMA_FUZZ_SHRINK=1`: shrinking a generated Pod takes Hypothesis minutes (it gave up
    after five, once), where the failing example as drawn is shown at once."""
    phases = list(Phase)
    if os.environ.get("KUBE_RDMA_FUZZ_SHRINK") != "1":
        phases.remove(Phase.shrink)
    return settings(
        max_examples=examples(default_examples),
        phases=phases,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )


def overlaid(base: Any, generated: Any) -> Any:
    """`generated` laid over `base`: objects merged key by key, lists of objects item by item
    (the base's extra items kept), anything else `generated`'s."""
    if isinstance(base, dict) and isinstance(generated, dict):
        merged = dict(base)
        for key, value in generated.items():
            merged[key] = overlaid(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(generated, list) and generated:
        items = [overlaid(b, g) for b, g in zip(base, generated, strict=False)]
        return items + base[len(items) :] + generated[len(items) :]
    return generated


@st.composite
def overlaid_pods(draw: st.DrawFn, pod_schema: Json) -> Any:
    """A pod as a training operator creates it (pod_strategies.valid_pods) with a Pod generated
    from `pod_schema` laid over it, its name, namespace and container names kept: Pods the
    schema generates, shaped so that they get past the first checks to the code behind."""
    from testbed.builders.pod_strategies import valid_pods

    base = draw(valid_pods())
    generated = draw(from_schema(pod_schema))
    if not isinstance(generated, dict):
        return base
    pod = overlaid(base, generated)
    if isinstance(pod.get("metadata"), dict):
        for key in ("name", "generateName", "namespace"):
            if key in base["metadata"]:
                pod["metadata"][key] = base["metadata"][key]
    containers = (
        pod.get("spec", {}).get("containers") if isinstance(pod.get("spec"), dict) else None
    )
    if isinstance(containers, list):
        for container, original in zip(containers, base["spec"]["containers"], strict=False):
            if isinstance(container, dict):
                container["name"] = original["name"]
    return pod
