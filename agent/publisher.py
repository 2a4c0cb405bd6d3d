"""The node agent: scan the node on an interval and publish its topology on the Node.

It patches the Node's `kube-rdma.io/topology` annotation and `kube-rdma.io/rdma-ready` label,
only when either changed (it starts from what the Node already carries, so a restart does not
patch), and retries API errors with exponential backoff. A scan that fails keeps the last
published state: a transient sysfs read error should not make a node look RDMA-less.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.discovery import DiscoveryError, discover
from agent.error_rules import DEFAULT_ERROR_RULES, ErrorRules
from agent.health import HealthTracker, rdma_ready
from agent.nvtopo import TopoParseError
from agent.sysfs import SysfsError
from kube_rdma.core import keys
from kube_rdma.core.topology import DocumentTooLarge, Topology, encode
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError

log = logging.getLogger("kube_rdma.agent")

MERGE_PATCH = "application/merge-patch+json"
ScanError = (DiscoveryError, SysfsError, TopoParseError, DocumentTooLarge)


@dataclass(frozen=True)
class Published:
    """What the Node carries: the topology annotation and the readiness label."""

    document: str | None
    ready: str | None


@dataclass(frozen=True)
class AgentSettings:
    node_name: str
    sysfs_root: Path = Path("/sys")
    topo_file: Path | None = None
    interval: float = 30.0
    recover_after: int = 3
    initial_backoff: float = 1.0
    max_backoff: float = 300.0


class Agent:
    def __init__(
        self,
        core_api: Any,
        settings: AgentSettings,
        scan: Callable[[], Topology] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        error_rules: ErrorRules = DEFAULT_ERROR_RULES,
    ) -> None:
        self._api = core_api
        self._settings = settings
        self._scan = scan or (lambda: discover(settings.sysfs_root, settings.topo_file))
        self._sleep = sleep
        self._health = HealthTracker(settings.recover_after, error_rules)
        self._backoff = settings.initial_backoff
        self.published: Published | None = None

    async def run(self) -> None:
        """Scan and publish until cancelled."""
        while True:
            await self._sleep(await self.step())

    async def step(self) -> float:
        """One scan and, when something changed, one patch; the seconds to wait before the next."""
        try:
            topology = self._health.update(self._scan())
            wanted = Published(encode(topology), "true" if rdma_ready(topology) else "false")
        except (*ScanError, OSError) as e:
            log.error("scan failed, keeping what the node carries: %s", e)
            return self._settings.interval
        try:
            if self.published is None:
                self.published = await self._read_node()
            if wanted != self.published:
                await self._patch(wanted)
                self.published = wanted
                log.info(
                    "published topology",
                    extra={"node": self._settings.node_name, "ready": wanted.ready},
                )
        except ApiError as e:
            delay = self._backoff
            self._backoff = min(self._backoff * 2, self._settings.max_backoff)
            log.warning("%s; retrying in %.0fs", e, delay)
            return delay
        self._backoff = self._settings.initial_backoff
        return self._settings.interval

    async def _read_node(self) -> Published:
        name = self._settings.node_name
        body = await call(f"read Node {name}", self._api.read_node, name)
        metadata = body.get("metadata") or {}
        return Published(
            (metadata.get("annotations") or {}).get(keys.TOPOLOGY),
            (metadata.get("labels") or {}).get(keys.RDMA_READY),
        )

    async def _patch(self, wanted: Published) -> None:
        patch = {
            "metadata": {
                "annotations": {keys.TOPOLOGY: wanted.document},
                "labels": {keys.RDMA_READY: wanted.ready},
            }
        }
        name = self._settings.node_name
        patch_node = self._api.patch_node
        await call(f"patch Node {name}", patch_node, name, patch, _content_type=MERGE_PATCH)
