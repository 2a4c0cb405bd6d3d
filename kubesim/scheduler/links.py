"""What the emulated scheduler talks to: an apiserver and, when it has one, an extender.

`HttpLinks` reaches both over the network, as kube-scheduler does; the simulator gives links to
an apiserver kept in memory and to an extender in the same process (kubesim/simulate/), so that
the same scheduling code runs on a simulated clock without a socket.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

import aiohttp

from kubesim.scheduler.apiserver import ApiCalls, connect
from kubesim.scheduler.extender_client import Post, http_post


class Links(Protocol):
    extender_name: str | None
    """How error messages name the extender (its URL); None: there is no extender."""

    async def open(self, exits: contextlib.AsyncExitStack) -> tuple[ApiCalls, Post | None]:
        """The apiserver and the extender's calls (None without one), closed by `exits`."""
        ...


class HttpLinks:
    def __init__(self, apiserver_url: str, extender_url: str | None, http_timeout: float) -> None:
        self.apiserver_url = apiserver_url
        self.extender_name = extender_url
        self._http_timeout = http_timeout

    async def open(self, exits: contextlib.AsyncExitStack) -> tuple[ApiCalls, Post | None]:
        apiserver = await exits.enter_async_context(connect(self.apiserver_url))
        if self.extender_name is None:
            return apiserver, None
        # Go's HTTP client has no per-host connection cap; aiohttp's default of 100 would queue
        # the binds a gang barrier holds open.
        connector = aiohttp.TCPConnector(limit=0)
        session = await exits.enter_async_context(aiohttp.ClientSession(connector=connector))
        return apiserver, http_post(self.extender_name, session, self._http_timeout)
