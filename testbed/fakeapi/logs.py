"""pods/NAME/log: what a test says a pod's container printed, served as the kubelet serves it
through the apiserver (text/plain; `container` picks one, default the pod's only or first).

The fake runs no containers, so a test plays the kubelet: it sets the text with `PodLogs.set`
(`FakeApiServer.logs`) once the pod "ran". A pod that does not exist answers 404 like any
object; one that exists without a log set answers an empty body.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web

from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.store import Store


class PodLogs:
    def __init__(self) -> None:
        self._texts: dict[tuple[str, str, str | None], str] = {}

    def set(self, namespace: str, pod: str, text: str, container: str | None = None) -> None:
        self._texts[(namespace, pod, container)] = text

    def get(self, namespace: str, pod: str, container: str | None) -> str:
        found = self._texts.get((namespace, pod, container))
        return found if found is not None else self._texts.get((namespace, pod, None), "")


LOGS: Final = web.AppKey("logs", PodLogs)


def serve_log(request: web.Request, store: Store, namespace: str | None, pod: str) -> web.Response:
    if request.method != "GET" or namespace is None:
        raise ApiError(405, f"fake apiserver: {request.method} is not supported on pods/log")
    store.get("pods", pod, namespace)  # 404 for a pod that does not exist
    text = request.app[LOGS].get(namespace, pod, request.query.get("container"))
    return web.Response(text=text, content_type="text/plain")
