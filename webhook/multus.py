"""Merging rail networks into the pod's Multus `k8s.v1.cni.cncf.io/networks` annotation.

Multus accepts two forms: a comma-separated list (`ns/name@ifname`) and a JSON list of
selection objects. A merge keeps whichever form the pod uses and adds only the networks it does
not already name, so repeated webhook passes never attach a rail twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"


class NetworksError(ValueError):
    """The pod's networks annotation cannot be read."""


@dataclass(frozen=True)
class Ref:
    namespace: str
    name: str
    interface: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name


def parse_ref(text: str, default_namespace: str) -> Ref:
    text = text.strip()
    text, _, interface = text.partition("@")
    namespace, _, name = text.rpartition("/")
    return Ref(namespace or default_namespace, name, interface or None)


def _parse(value: str, namespace: str) -> tuple[list[Ref], bool]:
    """The networks the annotation names, and whether it is in JSON form. Like Multus, any
    of `[`, `{` or `"` in the value means JSON, which must be a list."""
    if any(c in value for c in '[{"'):
        try:
            items = json.loads(value)
        except json.JSONDecodeError as e:
            raise NetworksError(f"{NETWORKS_ANNOTATION} is not valid JSON: {e}") from e
        except RecursionError as e:
            raise NetworksError(f"{NETWORKS_ANNOTATION} is nested too deeply") from e
        if not isinstance(items, list):
            raise NetworksError(f"{NETWORKS_ANNOTATION} must be a JSON list of networks")
        refs = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise NetworksError(f"{NETWORKS_ANNOTATION}: each entry needs a string `name`")
            refs.append(Ref(item.get("namespace") or namespace, item["name"]))
        return refs, True
    return [parse_ref(part, namespace) for part in value.split(",") if part.strip()], False


def listed(value: str, namespace: str) -> list[Ref]:
    """The networks the annotation value names; raises NetworksError when it is unreadable."""
    return _parse(value, namespace)[0]


def merge(current: str | None, wanted: list[str], namespace: str) -> str | None:
    """The annotation value with `wanted` added, or None when nothing needs adding."""
    existing, as_json = _parse(current or "", namespace)
    have = {ref.key for ref in existing}
    missing = []
    for text in wanted:
        ref = parse_ref(text, namespace)
        if ref.key not in have:
            have.add(ref.key)
            missing.append((text, ref))
    if not missing:
        return None
    if as_json:
        items = json.loads(current or "[]")
        for _, ref in missing:
            entry = {"name": ref.name, "namespace": ref.namespace}
            if ref.interface:
                entry["interface"] = ref.interface
            items.append(entry)
        return json.dumps(items, separators=(",", ":"))
    parts = [p.strip() for p in (current or "").split(",") if p.strip()]
    return ",".join(parts + [text for text, _ in missing])
