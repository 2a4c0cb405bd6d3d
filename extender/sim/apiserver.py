"""The emulated scheduler's calls to a Kubernetes apiserver, over the real REST protocol.

Only what kube-scheduler and a Job controller do with core/v1 Pods and Nodes: list (the items and
the list's resourceVersion), watch from a resourceVersion, create and delete a pod, and POST the
`pods/binding` subresource. It speaks plain HTTP to a base URL, so it works against the test
apiserver and against any real one reachable without credentials (`kubectl proxy`). A failed call
raises an `ApiserverError`; 404 and 410 have their own types, so callers never read a status code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import aiohttp
import orjson

from kube_rdma.core.objects import Json

TIMEOUT = 30.0
"""Seconds for a call other than a watch."""
NAMESPACED = frozenset({"pods"})


class ApiserverError(Exception):
    """A call the apiserver refused (`code` is its HTTP status) or that went unanswered (`code`
    None). The message is the Status's message, then the code in brackets."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class NotFound(ApiserverError):
    """404: the object is not there (a pod already deleted)."""


class Gone(ApiserverError):
    """410: the resourceVersion asked for is older than the apiserver's history; list again."""


def describe(error: BaseException) -> str:
    """The words for a call that went unanswered (a timeout's str() is empty)."""
    return str(error) or type(error).__name__


class Apiserver:
    """Pods and Nodes at `base_url` through `session` (which the caller opens and closes)."""

    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url.rstrip("/")
        self._session = session

    async def list(self, plural: str, field_selector: str = "") -> tuple[list[Json], str]:
        """Every object of `plural` (in all namespaces) and the list's resourceVersion."""
        params = {"fieldSelector": field_selector} if field_selector else {}
        body = await self._call("GET", self._url(plural), params=params)
        version = (body.get("metadata") or {}).get("resourceVersion")
        return list(body.get("items") or []), str(version)

    async def watch(
        self, plural: str, version: str, field_selector: str = ""
    ) -> AsyncGenerator[Json, None]:
        """The events after `version`, bookmarks included, until the server ends the stream.
        Raises Gone when the version is too old, as a status or as an ERROR event."""
        params = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
        if field_selector:
            params["fieldSelector"] = field_selector
        unbounded = aiohttp.ClientTimeout(total=None, sock_read=None)
        try:
            async with self._session.get(
                self._url(plural), params=params, timeout=unbounded
            ) as response:
                if response.status != 200:
                    raise _refused(response.status, await response.read())
                async for event in _lines(response):
                    if _expired(event):
                        raise _refused(410, orjson.dumps(event["object"]))
                    yield event
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiserverError(describe(e)) from None

    async def create(self, plural: str, obj: Json) -> Json:
        namespace = (obj.get("metadata") or {}).get("namespace") or "default"
        return await self._call("POST", self._url(plural, namespace), json=obj)

    async def delete(self, plural: str, name: str, namespace: str | None = None) -> None:
        await self._call("DELETE", self._url(plural, namespace or "default", name))

    async def bind(self, namespace: str, name: str, uid: str | None, node: str) -> None:
        """Bind the pod to `node` (its UID a precondition when given), as the default binder."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await self._call("POST", self._url("pods", namespace, name) + "/binding", json=binding)

    def _url(self, plural: str, namespace: str | None = None, name: str | None = None) -> str:
        scope = f"/namespaces/{namespace}" if namespace and plural in NAMESPACED else ""
        return f"{self.base_url}/api/v1{scope}/{plural}" + (f"/{name}" if name else "")

    async def _call(self, method: str, url: str, **kwargs: Any) -> Json:
        timeout = aiohttp.ClientTimeout(total=TIMEOUT)
        try:
            async with self._session.request(method, url, timeout=timeout, **kwargs) as response:
                body = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ApiserverError(describe(e)) from None
        if not 200 <= response.status < 300:
            raise _refused(response.status, body)
        answer = orjson.loads(body) if body else {}
        return answer if isinstance(answer, dict) else {}


def _refused(code: int, body: bytes) -> ApiserverError:
    kind = {404: NotFound, 410: Gone}.get(code, ApiserverError)
    return kind(f"{_status_message(body)} ({code})", code)


def _expired(event: Json) -> bool:
    """An ERROR event carrying 410: the watch started from a version already compacted."""
    return event.get("type") == "ERROR" and (event.get("object") or {}).get("code") == 410


def _status_message(body: bytes) -> str:
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode(errors="replace")
    return str(status.get("message", "")) if isinstance(status, dict) else ""


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[Json]:
    """The JSON lines of a watch stream (read in chunks: a Node line can be long)."""
    buffer = b""
    async for chunk in response.content.iter_any():
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
