"""Failed calls as the apiserver reports them: a `Status` body with a code, reason and message.

The messages are the apiserver's own wording (k8s.io/apimachinery's pkg/api/errors), so that code
which logs or matches them sees what it would see against a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import orjson
from aiohttp import web

from kube_rdma.core.objects import Json

NO_RESOURCE: Final = "the server could not find the requested resource"
NAMESPACE_MISMATCH: Final = (
    "the namespace of the provided object does not match the namespace sent on the request"
)
MODIFIED: Final = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
REASONS: Final[Mapping[int, str]] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class ApiError(Exception):
    """A failed call, answered with a `Status` body as the apiserver does."""

    def __init__(
        self, code: int, message: str, reason: str = "", *, name: str = "", plural: str = ""
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.name, self.plural = code, message, name, plural
        self.reason = reason or REASONS.get(code, "Unknown")

    def status(self) -> Json:
        body: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        body |= {"message": self.message, "reason": self.reason, "code": self.code}
        if self.name:
            body["details"] = {"name": self.name, "kind": self.plural}
        return body


def conflict(qualified: str, name: str, why: str, plural: str) -> ApiError:
    """409 for a write that lost a race or breaks a precondition."""
    message = f'Operation cannot be fulfilled on {qualified} "{name}": {why}'
    return ApiError(409, message, name=name, plural=plural)


def integer(text: str, what: str) -> int:
    """A query parameter read as an integer; 400 naming it when it is not one."""
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, f"{what}: invalid value {text!r}") from None


def json_response(body: Json, code: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=code, content_type="application/json")


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), error.code)
