"""The node agent: scan the node on an interval and publish its topology on the Node.

It patches the Node's `kube-rdma.io/topology` annotation and `kube-rdma.io/rdma-ready` label,
only when either changed (it starts from what the Node already carries, so a restart does not
patch), and retries API errors with exponential backoff. A scan that fails keeps the last
published state: a transient sysfs read error should not make a node look RDMA-less; a scan
that could not read a port or a device publishes the rest, and says what it left out once
(agent/problem_log.py). Changes of the document alone are paced (agent/pacing.py), so a
flapping or noisy port costs the apiserver one patch per gap, not one per scan; a change of the
label or the taint goes out at the scan that sees it.

With `taint_unhealthy`, the Node also carries the rdma-unhealthy taint while the label is
"false" (agent/taint.py). Without it, the agent removes that taint where an earlier agent left
it, so turning the option off never leaves a node tainted for good.

With `device_taints` (DRA nodes, agent/dra_taints.py), the same health judges the NICs a DRA
driver publishes: each unhealthy one gets a DeviceTaintRule. Its API errors are logged and tried
again at the next scan; they never hold back the Node's own patch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.discovery import DiscoveryError, discover
from agent.dra_taints import DeviceTaints
from agent.error_rules import DEFAULT_ERROR_RULES, ErrorRules
from agent.health import HealthTracker, rdma_ready
from agent.nvtopo import TopoParseError
from agent.pacing import MAX_GAP_SECONDS, MIN_GAP_SECONDS, PatchPacer
from agent.problem_log import ProblemLog
from agent.sysfs import PROC, Problems, SysfsError
from agent.taint import EFFECT, MERGE_PATCH, is_ours, set_taint, taints_of
from kube_rdma.core import keys
from kube_rdma.core.topology import DocumentTooLarge, Topology, encode
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError

log = logging.getLogger("kube_rdma.agent")

ScanError = (DiscoveryError, SysfsError, TopoParseError, DocumentTooLarge)
Scan = Callable[[Problems], Topology]
"""One scan of the node, appending to the list what it left out."""


@dataclass(frozen=True)
class Published:
    """What the Node carries: the topology annotation, the readiness label, our taint."""

    document: str | None
    ready: str | None
    tainted: bool = False


@dataclass(frozen=True)
class AgentSettings:
    node_name: str
    sysfs_root: Path = Path("/sys")
    proc_root: Path = PROC
    topo_file: Path | None = None
    interval: float = 30.0
    recover_after: int = 3
    initial_backoff: float = 1.0
    max_backoff: float = 300.0
    taint_unhealthy: bool = False
    min_patch_gap: float = MIN_GAP_SECONDS
    max_patch_gap: float = MAX_GAP_SECONDS


class Agent:
    def __init__(
        self,
        core_api: Any,
        settings: AgentSettings,
        scan: Scan | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        error_rules: ErrorRules = DEFAULT_ERROR_RULES,
        clock: Callable[[], float] = time.monotonic,
        device_taints: DeviceTaints | None = None,
    ) -> None:
        self._api = core_api
        self._device_taints = device_taints
        self._settings = settings
        self._scan = scan or (
            lambda problems: discover(
                settings.sysfs_root, settings.topo_file, settings.proc_root, problems
            )
        )
        self._sleep = sleep
        self._health = HealthTracker(settings.recover_after, error_rules, clock)
        self._pacer = PatchPacer(settings.min_patch_gap, settings.max_patch_gap, clock)
        self._problems = ProblemLog(log, settings.node_name)
        self._backoff = settings.initial_backoff
        self.published: Published | None = None

    async def run(self) -> None:
        """Scan and publish until cancelled."""
        while True:
            await self._sleep(await self.step())

    async def step(self) -> float:
        """One scan and, when something changed, one patch; the seconds to wait before the next
        (sooner than the interval when a paced change is due before then)."""
        problems: Problems = []
        try:
            topology = self._health.update(self._scan(problems))
            ready = rdma_ready(topology)
            tainted = self._settings.taint_unhealthy and not ready
            wanted = Published(encode(topology), "true" if ready else "false", tainted)
        except (*ScanError, OSError) as e:
            self._problems.report([f"failed, keeping what the node carries: {e}"])
            return self._settings.interval
        self._problems.report(problems)
        await self._sync_device_taints(topology)
        try:
            wait = await self._publish(wanted)
        except ApiError as e:
            delay = self._backoff
            self._backoff = min(self._backoff * 2, self._settings.max_backoff)
            log.warning("%s; retrying in %.0fs", e, delay)
            return delay
        self._backoff = self._settings.initial_backoff
        return min(wait, self._settings.interval) if wait else self._settings.interval

    async def _sync_device_taints(self, topology: Topology) -> None:
        if self._device_taints is None:
            return
        try:
            await self._device_taints.sync(topology)
        except ApiError as e:
            log.warning(
                "device taints: %s; trying again at the next scan",
                e,
                extra={"node": self._settings.node_name},
            )

    async def _publish(self, wanted: Published) -> float:
        """Patch what changed, or the seconds until the pacer lets a document change out."""
        node = self._settings.node_name
        if self.published is None:
            self.published = await self._read_node()
        if self._only_the_document_changed(wanted) and (wait := self._pacer.wait()) > 0:
            return wait
        if (wanted.document, wanted.ready) != (self.published.document, self.published.ready):
            await self._patch(wanted)
            self._pacer.patched()
            self.published = replace(wanted, tainted=self.published.tainted)
            log.info("published topology", extra={"node": node, "ready": wanted.ready})
        if wanted.tainted != self.published.tainted:
            await set_taint(self._api, node, wanted.tainted)
            self.published = wanted
            done = "tainted" if wanted.tainted else "removed the taint"
            log.info("%s %s:%s", done, keys.RDMA_UNHEALTHY, EFFECT, extra={"node": node})
        return 0.0

    def _only_the_document_changed(self, wanted: Published) -> bool:
        published = self.published
        assert published is not None
        same_flags = (wanted.ready, wanted.tainted) == (published.ready, published.tainted)
        return same_flags and wanted.document != published.document

    async def _read_node(self) -> Published:
        name = self._settings.node_name
        body = await call(f"read Node {name}", self._api.read_node, name)
        metadata = body.get("metadata") or {}
        return Published(
            (metadata.get("annotations") or {}).get(keys.TOPOLOGY),
            (metadata.get("labels") or {}).get(keys.RDMA_READY),
            any(is_ours(t) for t in taints_of(body)),
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
