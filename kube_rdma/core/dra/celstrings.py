"""The part of cel-go's strings extension (ext.Strings, which the Kubernetes CEL base
environment loads, k8s.io/apiserver pkg/cel/environment/base.go) that cel-python lacks, for
`device.attributes[...].services.split("example").size() >= 2` (the DRA CEL tests'
split_attribute, k8s.io/dynamic-resource-allocation cel/compile_test.go)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celpy import celtypes


def _split(text: Any, separator: Any, limit: Any = None) -> celtypes.ListType:
    """`split(sep)`, `split(sep, n)`: n < 0 all parts, 0 none, else at most n parts."""
    if limit is not None and int(limit) == 0:
        return celtypes.ListType([])
    parts = str(text).split(str(separator)) if str(separator) else list(str(text))
    if limit is not None and int(limit) > 0 and len(parts) > int(limit):
        kept = int(limit) - 1
        parts = [*parts[:kept], str(separator).join(parts[kept:])]
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _join(items: Any, separator: Any = "") -> celtypes.StringType:
    return celtypes.StringType(str(separator).join(str(i) for i in items))


def _index_of(text: Any, part: Any) -> celtypes.IntType:
    return celtypes.IntType(str(text).find(str(part)))


def _last_index_of(text: Any, part: Any) -> celtypes.IntType:
    return celtypes.IntType(str(text).rfind(str(part)))


STRING_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "split": _split,
    "join": _join,
    "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
    "upperAscii": lambda s: celtypes.StringType(str(s).upper()),
    "trim": lambda s: celtypes.StringType(str(s).strip()),
    "replace": lambda s, old, new: celtypes.StringType(str(s).replace(str(old), str(new))),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
}
