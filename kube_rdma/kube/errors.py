"""The errors of apiserver calls, one class per answer a caller acts on, as kopf's
`_cogs/clients/errors.py` has them.

A caller catches `NotFound`, `Conflict` or `Gone` where that answer is part of its logic (absent,
another writer moved first, re-list) and lets anything else propagate; nobody reads HTTP statuses
or response bodies. The message names the operation, the apiserver's reason and message (from
its `metav1.Status` body), and for the answers an admin fixes outside the program, what to check:

    patch Node gpu-01: Forbidden: nodes "gpu-01" is forbidden: User ... cannot patch resource
    "nodes" ... (check the Role or ClusterRole bound to this client)

A body that is not a `Status` is never echoed whole: a 2xx body may be a Secret, and an error
page from a proxy is cut to its first `TEXT_LIMIT` characters.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import orjson

TEXT_LIMIT: Final = 200


class ApiError(Exception):
    """An apiserver call that failed: `status` is None when no answer came back."""

    hint: ClassVar[str] = ""

    def __init__(self, operation: str, status: int | None, reason: str, message: str) -> None:
        self.operation = operation
        self.status = status
        self.reason = reason
        self.message = message
        advice = f" ({self.hint})" if self.hint else ""
        super().__init__(f"{operation}: {reason}: {message}{advice}")


class ClientError(ApiError):
    """A 4xx answer: the request, the credentials or the object's state is wrong."""


class ServerError(ApiError):
    """A 5xx answer: the apiserver (or what sits behind it) failed; worth retrying."""


class Unauthorized(ClientError):
    hint = "check the client's credentials: the kubeconfig, or the ServiceAccount token"


class Forbidden(ClientError):
    hint = "check the Role or ClusterRole bound to this client"


class NotFound(ClientError):
    pass


class Conflict(ClientError):
    """Another writer moved first (a stale resourceVersion), or the object exists already."""


class Gone(ClientError):
    """The resourceVersion of a watch or list is older than the apiserver keeps: re-list."""


class Invalid(ClientError):
    """The object failed the apiserver's validation (422)."""


class TooManyRequests(ClientError):
    hint = "the apiserver is shedding load under API Priority and Fairness; it eases on its own"


class Unreachable(ApiError):
    """No answer: the connection failed or the request timed out."""

    hint = "check the apiserver address and the network path to it"

    def __init__(self, operation: str, message: str) -> None:
        super().__init__(operation, None, "Unreachable", message)


CLASSES: Final[dict[int, type[ApiError]]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for(operation: str, status: int, body: bytes | Any) -> ApiError:
    """The typed error for an error answer; `body` as received, or already decoded (the object
    of a watch's ERROR event)."""
    decoded = _decode(body) if isinstance(body, bytes) else body
    is_status = isinstance(decoded, dict) and decoded.get("kind") == "Status"
    found: dict[str, Any] = decoded if is_status else {}
    reason = str(found.get("reason") or f"HTTP {status}")
    if found.get("message"):
        message = str(found["message"])
    elif isinstance(body, bytes) and decoded is None:
        message = _text(body)  # not JSON: a proxy's error page, say
    else:
        message = "no message"
    return _class(status)(operation, status, reason, message)


def _class(status: int) -> type[ApiError]:
    if status in CLASSES:
        return CLASSES[status]
    if 400 <= status < 500:
        return ClientError
    return ServerError if 500 <= status < 600 else ApiError


def _decode(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _text(data: bytes) -> str:
    text = data.decode(errors="replace").strip()
    if not text:
        return "no message"
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."
