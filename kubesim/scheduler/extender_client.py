"""kube-scheduler's calls to an HTTP extender, with the rules by which a call fails.

Follows pkg/scheduler/extender.go: a pod is sent only when it requests one of the
managedResources (IsInterested); the nodes go as NodeNames when the extender is nodeCacheCapable,
else as a NodeList; a returned node name that was not sent fails the call, so does a non-empty
`Error`, any HTTP error or a timeout (`httpTimeout`); /bind gets PodName, PodNamespace, PodUID
and Node. Prioritize errors are the caller's to ignore, as kube-scheduler does. An extender's
score runs 0 to MaxExtenderPriority (10), and is scaled to the in-tree 0-100 by the caller.
/preempt (ProcessPreemption) gets the candidates as NodeNameToMetaVictims (victims by UID) when
nodeCacheCapable, else as NodeNameToVictims (whole pods), and its answer's UIDs are looked up
among the pods on their own node (convertToVictims): a node or a UID not found fails the call.

The calls go through a `Post`: `http_post` sends them over HTTP; the simulator hands the same JSON
bodies to an extender in the same process (kubesim/simulate/wire.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from extender.protocol import field as wire_field
from kube_rdma.core.objects import Json
from kubesim.scheduler.config import SchedulerConfig
from kubesim.scheduler.preemption import Victims

MAX_EXTENDER_PRIORITY = 10

Post = Callable[[str, Json], Awaitable[Any]]
"""(verb, request body) -> the decoded answer; raises ExtenderError when the call fails."""


class ExtenderError(Exception):
    """An extender call that failed: HTTP error, timeout, bad body or a non-empty `Error`."""


class ExtenderClient:
    """The extender at `url` (named in error messages), called through `post` as `config`
    says; `node` gives a Node object for the NodeList form of the arguments."""

    def __init__(
        self,
        url: str,
        config: SchedulerConfig,
        post: Post,
        node: Callable[[str], Json | None],
    ) -> None:
        self.url = url.rstrip("/")
        self._config, self._post, self._node = config, post, node

    def interested(self, pod: Json) -> bool:
        """IsInterested: a container or init container names a managed resource."""
        managed = set(self._config.managed_resources)
        if not managed:
            return True
        spec = pod.get("spec") or {}
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            resources = container.get("resources") or {}
            named = {*(resources.get("requests") or {}), *(resources.get("limits") or {})}
            if named & managed:
                return True
        return False

    async def filter(
        self,
        pod: Json,
        names: list[str],
        failed: dict[str, str],
        unresolvable: set[str] | None = None,
    ) -> list[str]:
        """The nodes that pass; the reasons of those that fail are added to `failed`, and the
        names of those failed as unresolvable to `unresolvable`."""
        result = await self._post("filter", self._args(pod, names))
        if not isinstance(result, dict):
            raise ExtenderError(f"filter with extender at URL {self.url}: not an object")
        if error := wire_field(result, "Error"):
            raise ExtenderError(str(error))
        hopeless = _strings(wire_field(result, "FailedAndUnresolvableNodes") or {})
        failed.update(_strings(wire_field(result, "FailedNodes") or {}))
        failed.update(hopeless)
        if unresolvable is not None:
            unresolvable.update(hopeless)
        passed = wire_field(result, "NodeNames")
        if self._config.node_cache_capable and passed is not None:
            return self._only_sent(passed, names)
        node_list = wire_field(result, "Nodes")
        if isinstance(node_list, dict):
            return [str(item["metadata"]["name"]) for item in node_list.get("items") or []]
        return []

    async def prioritize(self, pod: Json, names: list[str]) -> dict[str, int]:
        """Host -> score, 0 to MAX_EXTENDER_PRIORITY; entries without an integer score left out."""
        result = await self._post("prioritize", self._args(pod, names))
        if not isinstance(result, list):
            return {}
        scores = {}
        for entry in result:
            if isinstance(entry, dict) and isinstance(wire_field(entry, "Score"), int):
                scores[str(wire_field(entry, "Host"))] = int(wire_field(entry, "Score"))
        return scores

    async def bind(self, pod: Json, node: str) -> None:
        meta = pod.get("metadata") or {}
        body = {
            "PodName": meta.get("name"),
            "PodNamespace": meta.get("namespace") or "default",
            "PodUID": meta.get("uid") or "",
            "Node": node,
        }
        result = await self._post("bind", body)
        error = wire_field(result, "Error") if isinstance(result, dict) else "answer not an object"
        if error:
            raise ExtenderError(str(error))

    async def preempt(
        self,
        pod: Json,
        candidates: Mapping[str, Victims],
        pods_on: Callable[[str], Sequence[Json] | None],
    ) -> dict[str, Victims]:
        """The candidates the extender keeps, with the victims it names; `pods_on` gives the
        pods on a node (None: no such node)."""
        if self._config.node_cache_capable:
            body = {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": _uid(p)} for p in v.pods],
                       "NumPDBViolations": v.pdb_violations}
                for node, v in candidates.items()
            }}  # fmt: skip
        else:
            body = {"Pod": pod, "NodeNameToMetaVictims": None, "NodeNameToVictims": {
                node: {"Pods": list(v.pods), "NumPDBViolations": v.pdb_violations}
                for node, v in candidates.items()
            }}  # fmt: skip
        result = await self._post("preempt", body)
        if not isinstance(result, dict):
            raise ExtenderError(f"preempt with extender at URL {self.url}: not an object")
        answer = wire_field(result, "NodeNameToMetaVictims") or {}
        if not isinstance(answer, dict):
            raise ExtenderError(f"preempt with extender at URL {self.url}: not a map of nodes")
        return {str(node): self._victims(str(node), meta, pods_on) for node, meta in answer.items()}

    def _victims(
        self, node: str, meta: Any, pods_on: Callable[[str], Sequence[Json] | None]
    ) -> Victims:
        """convertToVictims for one node."""
        on_node = pods_on(node)
        if on_node is None:
            raise ExtenderError(f'nodeinfo not found for node name "{node}"')
        meta = meta if isinstance(meta, dict) else {}
        by_uid = {_uid(p): p for p in on_node}
        pods = []
        for entry in wire_field(meta, "Pods") or []:
            uid = str(wire_field(entry, "UID") if isinstance(entry, dict) else "")
            if uid not in by_uid:
                # Go prints the *MetaPod with %v: &{uid}
                raise ExtenderError(
                    f"extender: {self.url} claims to preempt pod (UID: &{{{uid}}}) on node: "
                    f"{node}, but the pod is not found on that node"
                )
            pods.append(by_uid[uid])
        violations = wire_field(meta, "NumPDBViolations")
        return Victims(tuple(pods), violations if isinstance(violations, int) else 0)

    def _only_sent(self, passed: list[Any], sent: list[str]) -> list[str]:
        known = set(sent)
        for name in passed:
            if name not in known:
                raise ExtenderError(
                    f'extender "{self.url}" claims a filtered node "{name}" which is not found '
                    "in the input node list"
                )
        return [str(n) for n in passed]

    def _args(self, pod: Json, names: list[str]) -> Json:
        if self._config.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": names}
        items = [self._node(n) for n in names]
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}


def _uid(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def http_post(url: str, session: aiohttp.ClientSession, http_timeout: float) -> Post:
    """Calls to the extender at base URL `url` over HTTP, each given `http_timeout` seconds."""
    base = url.rstrip("/")

    async def post(verb: str, body: Json) -> Any:
        target = f"{base}/{verb}"
        timeout = aiohttp.ClientTimeout(total=http_timeout)
        headers = {"Content-Type": "application/json"}
        try:
            async with session.post(
                target, data=orjson.dumps(body), headers=headers, timeout=timeout
            ) as response:
                data = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ExtenderError(f"{verb} with extender at URL {target}: {_describe(e)}") from None
        if response.status != 200:
            raise ExtenderError(
                f"failed {verb} with extender at URL {target}, code {response.status}"
            )
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ExtenderError(
                f"{verb} with extender at URL {target}: answer is not JSON"
            ) from None

    return post


def _describe(error: BaseException) -> str:
    """The words for a call that went unanswered (a timeout's str() is empty)."""
    return str(error) or type(error).__name__


def _strings(reasons: Mapping[Any, Any]) -> dict[str, str]:
    """Node -> reason as strings, converted a list at a time: at `percentageOfNodesToScore`
    100 a gang member's answer fails all but one of the cluster's nodes."""
    return dict(zip(map(str, reasons), map(str, reasons.values()), strict=True))
