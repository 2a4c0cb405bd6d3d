"""What the fake apiserver can be told to do wrong, for tests of the code that watches it.

A reflector has to survive what real apiservers, their load balancers and the network do to a
long-lived watch. Each fault here is one of those, switched on from a test (in-process, through
`FakeApiServer.faults` and its controls) or for a whole run (`python -m testbed.fakeapi --outage
... --slow ...`):
- a stream cut in the middle of an event: half a JSON line, then the connection closed (`CUT`,
  a crash or a reset) or the response ended as if complete (`TRUNCATE`, a proxy that gives up);
- an event sent twice (`DUPLICATE`, a retrying proxy) or after the one that followed it
  (`REORDER`, which a conforming apiserver never does: a client must not apply it blindly);
- 410 Gone for a watch from a compacted resourceVersion, as an ERROR event in a 200 stream (the
  default, as the watch cache answers) or as the watch request's own HTTP status
  (`expired_as_http`);
- the apiserver unavailable, answering 503 to everything (`unavailable`); refusing connections
  altogether is done by the server itself, which stops listening;
- slow answers: every request waits `delay` seconds first.
Stream faults are taken by the next event sent on a watch of the given resource (any resource
when none is given), one event per fault.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field

import orjson
from aiohttp import typedefs, web

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError, error_response


class StreamFault(enum.Enum):
    CUT = "cut"
    """Half of the event, then the connection closed under the response."""
    TRUNCATE = "truncate"
    """Half of the event, then the response ended properly: no newline, no error."""
    DUPLICATE = "duplicate"
    """The event, then the same event again."""
    REORDER = "reorder"
    """The event held back and sent after the next one."""


@dataclass
class Faults:
    """The faults switched on now; every field can be changed while the server runs."""

    expired_as_http: bool = False
    """A watch from a compacted resourceVersion is answered HTTP 410, not a 200 stream whose
    one event is a 410 ERROR."""
    unavailable: bool = False
    """Every request is answered 503, as an apiserver that lost etcd or is shutting down."""
    delay: float = 0.0
    """Seconds every request waits before it is handled."""
    _pending: list[tuple[StreamFault, str | None]] = field(default_factory=list)

    def inject(self, fault: StreamFault, plural: str | None = None, times: int = 1) -> None:
        """Apply `fault` to the next `times` events sent on watches of `plural` (any: None)."""
        self._pending += [(fault, plural)] * times

    @property
    def pending(self) -> int:
        """How many injected stream faults have not been applied yet."""
        return len(self._pending)

    def take(self, plural: str) -> StreamFault | None:
        for index, (fault, wanted) in enumerate(self._pending):
            if wanted in (None, plural):
                del self._pending[index]
                return fault
        return None

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: typedefs.Handler
    ) -> web.StreamResponse:
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.unavailable:
            return error_response(ApiError(503, "fake apiserver: unavailable"))
        return await handler(request)


class StreamShaper:
    """One watch stream's view of the faults: what to write for each event."""

    def __init__(self, faults: Faults, plural: str) -> None:
        self._faults = faults
        self._plural = plural
        self._held: bytes | None = None

    def lines(self, event: Json) -> tuple[list[bytes], StreamFault | None]:
        """The bytes to write for `event`, and the cut (CUT or TRUNCATE) to end the stream
        with after them, if any."""
        line = orjson.dumps(event) + b"\n"
        held, self._held = self._held, None
        fault = self._faults.take(self._plural)
        if fault in (StreamFault.CUT, StreamFault.TRUNCATE):
            return [line[: len(line) // 2]], fault
        if fault is StreamFault.REORDER and held is None:
            self._held = line
            return [], None
        written = [line, line] if fault is StreamFault.DUPLICATE else [line]
        return written + ([held] if held is not None else []), None
