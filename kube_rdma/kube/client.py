"""The one way kube-rdma calls the apiserver: a kubernetes-asyncio API method, its answer decoded
as raw JSON, and every failure turned into one of the typed errors of kube_rdma/kube/errors.py.

The methods are called with `_preload_content=False`: objects stay raw JSON dicts (decoding them
into the generated model classes costs far more than any caller needs) and a watch can be read
as it arrives. kubernetes-asyncio then leaves the status check to the caller, which is done here
and only here. Auth, TLS and kubeconfig handling stay kubernetes-asyncio's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import aiohttp
import orjson
from kubernetes_asyncio.client.exceptions import ApiException

from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import ApiError, Unreachable, error_for

# What aiohttp raises when no answer arrives: a refused or dropped connection, TLS, a timeout.
UNANSWERED: Final = (aiohttp.ClientError, TimeoutError, OSError)

Method = Callable[..., Awaitable[Any]]


async def call(
    operation: str, method: Method, *args: Any, request_timeout: float | None = None, **kwargs: Any
) -> Json:
    """The JSON object `method(*args, **kwargs)` answers; raises the typed ApiError naming
    `operation` (e.g. "patch Node gpu-01"). `request_timeout` bounds the whole request,
    in seconds."""
    async with stream(
        operation, method, *args, request_timeout=request_timeout, **kwargs
    ) as response:
        data = await response.read()
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        raise ApiError(operation, response.status, "InvalidResponse", "not a JSON object")
    return body


@contextlib.asynccontextmanager
async def stream(
    operation: str, method: Method, *args: Any, request_timeout: float | None = None, **kwargs: Any
) -> AsyncIterator[aiohttp.ClientResponse]:
    """The open response to `method(*args, **kwargs)` once it answered 2xx, to read as it
    arrives (a watch), released at the end; raises as `call` does, also for a connection lost
    while the block reads."""
    if request_timeout is not None:
        kwargs["_request_timeout"] = request_timeout
    response = await _send(operation, method, args, kwargs)
    try:
        if not 200 <= response.status < 300:
            raise error_for(operation, response.status, await response.read())
        yield response
    except UNANSWERED as e:
        raise Unreachable(operation, _describe(e)) from e
    finally:
        with contextlib.suppress(*UNANSWERED):
            response.release()


async def _send(
    operation: str, method: Method, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> aiohttp.ClientResponse:
    try:
        response: aiohttp.ClientResponse = await method(*args, _preload_content=False, **kwargs)
    except ApiException as e:
        # From a method that preloads its answer whatever it is given: kubernetes-asyncio then
        # checks the status itself and raises with the body decoded to text.
        body = e.body.encode() if isinstance(e.body, str) else e.body
        raise error_for(operation, int(e.status or 0), body or b"") from e
    except UNANSWERED as e:
        raise Unreachable(operation, _describe(e)) from e
    return response


def _describe(error: BaseException) -> str:
    if str(error):
        return str(error)
    return "no answer in time" if isinstance(error, TimeoutError) else type(error).__name__
