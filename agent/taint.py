"""The `kube-rdma.io/rdma-unhealthy:NoSchedule` taint, for pods that keep another scheduler.

The extender keeps RDMA pods off a node whose rails are unhealthy through the
`kube-rdma.io/rdma-ready` label; a pod of the default scheduler sees taints only. With
`--taint-unhealthy` the agent taints its Node while that label is "false" (so with the same
hysteresis) and removes the taint when it goes back to "true".

A Node's taints are one list that others write too: the node lifecycle controller's not-ready
and unreachable taints, cordoning, the GPU Operator, an admin. A merge patch replaces the list
whole, so the change is a read-modify-write: read the Node, add or remove this key with this
effect and nothing else, and patch the list with the resourceVersion that was read, which the
apiserver holds as a precondition (409 Conflict when another writer moved first). A Conflict
is retried from a fresh read, up to `ATTEMPTS` times.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import Conflict

log = logging.getLogger("kube_rdma.agent")

MERGE_PATCH: Final = "application/merge-patch+json"
EFFECT: Final = "NoSchedule"
ATTEMPTS: Final = 5


def is_ours(taint: Json) -> bool:
    return taint.get("key") == keys.RDMA_UNHEALTHY and taint.get("effect") == EFFECT


def taints_of(node: Json) -> list[Json]:
    taints: list[Json] = (node.get("spec") or {}).get("taints") or []
    return taints


def with_taint(taints: list[Json], wanted: bool) -> list[Json]:
    """`taints` with ours present or not, every other one as it was, in its place."""
    others = [t for t in taints if not is_ours(t)]
    return [*others, {"key": keys.RDMA_UNHEALTHY, "effect": EFFECT}] if wanted else others


async def set_taint(api: Any, name: str, wanted: bool) -> None:
    """Taint (`wanted`) or untaint the Node `name`; raises the typed ApiError of the last try."""
    for attempt in range(1, ATTEMPTS + 1):
        node = await call(f"read Node {name}", api.read_node, name)
        taints = taints_of(node)
        if any(is_ours(t) for t in taints) == wanted:
            return
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            # An empty list is dropped, as the apiserver drops it from a stored Node.
            "spec": {"taints": with_taint(taints, wanted) or None},
        }
        try:
            await call(f"patch Node {name}", api.patch_node, name, patch, _content_type=MERGE_PATCH)
            return
        except Conflict as e:
            if attempt == ATTEMPTS:
                raise
            log.info("%s; reading the Node again", e, extra={"node": name})
