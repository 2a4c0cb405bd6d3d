"""A small synchronous REST client for the tests' side of the control plane.

The product talks to the apiserver through kubernetes-asyncio; the tests drive it with plain
HTTPS calls instead, so that what the apiserver stores is read back with nothing of ours in
between.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube_rdma.core.objects import Json

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """The apiserver answered with an error status."""

    def __init__(self, status: int, body: Json) -> None:
        super().__init__(f"HTTP {status}: {body.get('message', body)}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Rest:
    server: str
    token: str
    ca_file: Path

    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Json:
        url = self.server + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._context(), timeout=30) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = {"message": raw}
            raise ApiError(e.code, decoded) from None
        result: Json = json.loads(text) if text else {}
        return result

    def get(self, path: str, **query: str) -> Json:
        return self.call("GET", path, query=query or None)

    def post(self, path: str, body: Json) -> Json:
        return self.call("POST", path, body)

    def patch(self, path: str, body: Any, content_type: str = MERGE) -> Json:
        return self.call("PATCH", path, body, content_type)

    def delete(self, path: str, **options: Any) -> Json:
        return self.call("DELETE", path, options or None)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except ApiError as e:
            if e.status == 404:
                return False
            raise
        return True
