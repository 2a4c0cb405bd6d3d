"""Label and field selectors, as a list or watch sends them in its query.

Only the equality-based grammar is understood (`a=b`, `a==b`, `a!=b`, `a`, `!a`); a set-based
term (`a in (x)`) is refused with 400 rather than silently matched wrong. A field selector takes
any dotted path, a missing field reading as "" and a boolean as "true"/"false", as the
apiserver's field label conversion prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: `op` is "=", "!=", "exists" or "!exists"."""

    key: str
    op: str
    value: str = ""

    def holds(self, value: str | None) -> bool:
        if self.op in ("exists", "!exists"):
            return (value is not None) == (self.op == "exists")
        return (value == self.value) == (self.op == "=")


def parse_selector(text: str) -> tuple[Requirement, ...]:
    terms = [t.strip() for t in text.split(",") if t.strip()]
    if any("(" in t or " in " in t or " notin " in t for t in terms):
        raise ApiError(400, f"fake apiserver: set-based selector {text!r} is not supported")
    return tuple(map(_requirement, terms))


def _requirement(term: str) -> Requirement:
    for op in ("!=", "==", "="):
        key, found, value = term.partition(op)
        if found:
            return Requirement(key.strip(), "!=" if op == "!=" else "=", value.strip())
    if term.startswith("!"):
        return Requirement(term[1:].strip(), "!exists")
    return Requirement(term, "exists")


@dataclass(frozen=True)
class Selector:
    """The objects a list or watch asks for."""

    plural: str
    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    @classmethod
    def from_query(cls, plural: str, namespace: str | None, query: Mapping[str, str]) -> Selector:
        labels = parse_selector(query.get("labelSelector", ""))
        return cls(plural, namespace, labels, parse_selector(query.get("fieldSelector", "")))

    def matches(self, obj: Json) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        labels = meta.get("labels") or {}
        return all(r.holds(labels.get(r.key)) for r in self.labels) and all(
            r.holds(field_value(obj, r.key)) for r in self.fields
        )


def field_value(obj: Json, path: str) -> str:
    """The field at a dotted path as a field selector compares it."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
