"""An in-memory Kubernetes API server that speaks the real REST wire protocol, for tests.

kopf tests its list, watch and patch code against an HTTP-level fake of the API instead of mocking
the client: kubernetes-asyncio's generated clients then run unchanged, with their URL building,
query encoding, content-type choice and streaming. This fake serves core/v1 (and whatever else is
added to its resource table) from memory, with one resourceVersion counter bumped by every write,
an event history so that watches resume from a resourceVersion, bookmarks, API discovery, and the
test controls a reflector has to survive: compaction (410 Gone), the server ending every watch (an
apiserver restart), injected HTTP errors, streams cut mid-event, duplicated and reordered events,
outages and slow answers. Every request is recorded so tests can assert exact bodies.

The parts, one concern each: `store` (objects, resourceVersions, the event log), `selectors`,
`patches`, `watch` (streams and bookmarks), `recording` (recorded requests, injected failures),
`faults` (what the server does wrong on demand), `discovery` (/api/v1, /apis/GROUP/VERSION),
`workloads` (the resources of the controllers that own training pods),
`routes` (the REST verbs), `server` (`FakeApiServer`, putting them together), `fixtures` (pytest).
`python -m testbed.fakeapi` serves a cluster snapshot file as a process of its own (`process`).

Where it simplifies, a test could tell it from a real apiserver: strategic merge patches replace
lists (see `patches`); lists always serve the latest state; selectors are equality-based only
(see `selectors`); the `status` subresource reads and writes the whole object; there is no
defaulting, validation, admission (a namespace need not exist), finalizers or graceful deletion.
"""

from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.faults import Faults, StreamFault
from testbed.fakeapi.fixtures import core_v1, fake_api
from testbed.fakeapi.kubeconfig import kubeconfig, write_kubeconfig
from testbed.fakeapi.patches import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
    merge_patch,
)
from testbed.fakeapi.recording import RecordedRequest
from testbed.fakeapi.selectors import Requirement, Selector, parse_selector
from testbed.fakeapi.server import FakeApiServer
from testbed.fakeapi.store import RESOURCES, Change, Resource, device_taint_rules
from testbed.fakeapi.watch import DEFAULT_WATCH_SECONDS, Watcher
from testbed.fakeapi.workloads import (
    NATIVE_GANG_VERSIONS,
    WORKLOAD_RESOURCES,
    native_gang_resources,
)
from testbed.wait import eventually

__all__ = [
    "DEFAULT_WATCH_SECONDS",
    "JSON_PATCH",
    "MERGE_PATCH",
    "NATIVE_GANG_VERSIONS",
    "RESOURCES",
    "STRATEGIC_MERGE_PATCH",
    "WORKLOAD_RESOURCES",
    "ApiError",
    "Change",
    "FakeApiServer",
    "Faults",
    "RecordedRequest",
    "Requirement",
    "Resource",
    "Selector",
    "StreamFault",
    "Watcher",
    "apply_patch",
    "core_v1",
    "device_taint_rules",
    "eventually",
    "fake_api",
    "kubeconfig",
    "merge_patch",
    "native_gang_resources",
    "parse_selector",
    "write_kubeconfig",
]
