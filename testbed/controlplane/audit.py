"""What each identity did and was refused, from the apiserver's audit log.

kube-apiserver writes one JSON event per request stage (`--audit-log-path`, policy level
Metadata); the ResponseComplete events carry the user, the verb, the resource and the status.
A 403 there is an RBAC refusal. A watch is long-running: it completes only when it ends, which
may be after the session, so its ResponseStarted event (written once the stream opens) counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kube_rdma.core.objects import Json

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""


@dataclass
class Activity:
    """One identity's requests as `verb resource` strings (with the subresource, and the
    namespace or `*` for cluster-wide calls)."""

    did: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)


def events(log: Path) -> Iterator[Json]:
    with log.open() as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def describe(event: Json) -> str:
    ref = event.get("objectRef") or {}
    group = ref.get("apiGroup", "")
    resource = ref.get("resource", "?") + (f"/{ref['subresource']}" if "subresource" in ref else "")
    qualified = f"{resource}.{group}" if group else resource
    return f"{event['verb']} {qualified} in {ref.get('namespace', '*')}"


def answered(event: Json) -> bool:
    stage = event.get("stage")
    return stage == "ResponseComplete" or (stage == "ResponseStarted" and event["verb"] == "watch")


def activity(log: Path, user: str, agent: str = "") -> Activity:
    """The user's completed resource requests (non-resource URLs like /healthz are left out),
    only those whose User-Agent starts with `agent` (kube-scheduler and the extender share one
    ServiceAccount, and are told apart by it)."""
    found = Activity()
    for event in events(log):
        if not answered(event) or "objectRef" not in event:
            continue
        if (event.get("user") or {}).get("username") != user:
            continue
        if not str(event.get("userAgent", "")).startswith(agent):
            continue
        code = (event.get("responseStatus") or {}).get("code", 0)
        (found.refused if code == 403 else found.did).add(describe(event))
    return found


def writes(log: Path, user: str, resource: str, namespace: str) -> list[tuple[str, str]]:
    """(verb, object name) of the user's successful creates and deletes of `resource` in
    `namespace`, in the order the apiserver completed them."""
    found = []
    for event in events(log):
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") == "ResponseComplete"
            and (event.get("user") or {}).get("username") == user
            and event.get("verb") in ("create", "delete")
            and ref.get("resource") == resource
            and ref.get("namespace") == namespace
            and (event.get("responseStatus") or {}).get("code", 0) < 300
        ):
            found.append((str(event["verb"]), str(ref.get("name", ""))))
    return found
