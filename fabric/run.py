"""`kube-rdma acceptance run`: render, apply round by round, wait, read the launchers' logs,
judge, label the nodes when asked, and delete everything it created, also when interrupted.

The apiserver is reached through kube_rdma/kube/client.py's one call path, a CoreV1Api given
at construction; the progress goes to a text stream. A test drives it against the fake
apiserver, playing the kubelet (pod phases, logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from pydantic import ValidationError

from fabric import nccl_log, nccl_tests, verdict
from fabric.plan import Group, Mode, plan
from fabric.render import Options, SshKey, group_name, render
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Topology, decode
from kube_rdma.kube.client import call, stream
from kube_rdma.kube.errors import NotFound

FINISHED = frozenset({"Succeeded", "Failed"})
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Settings:
    options: Options
    nodes: tuple[str, ...]
    mode: Mode = Mode.PAIRS
    fraction: float = verdict.DEFAULT_FRACTION
    min_busbw: float | None = None
    label: bool = False
    round_timeout: float = 1800.0
    poll: float = 2.0


@dataclass
class Outcome:
    group: Group
    answer: Json | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.answer is not None and self.answer["verdict"] == "pass" and not self.reasons


class AcceptanceRun:
    def __init__(
        self,
        api: Any,
        settings: Settings,
        key: SshKey,
        out: TextIO,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._api = api
        self._settings = settings
        self._key = key
        self._out = out
        self._clock = clock
        self._created: list[tuple[str, str]] = []
        self.leaves: dict[str, str] = {}
        """Each node's leaf, once the run has read the nodes."""

    async def run(self) -> list[Outcome]:
        nodes = {name: await self._node(name) for name in self._settings.nodes}
        self.leaves = {n: _labels(o).get(keys.LEAF, "") for n, o in nodes.items()}
        groups = plan(list(nodes), self.leaves, self._settings.mode)
        objects = render(self._settings.options, groups, self._key)
        outcomes: list[Outcome] = []
        try:
            await self._create(objects[0])
            for number in sorted({g.round for g in groups}):
                members = [g for g in groups if g.round == number]
                outcomes += await self._round(number, members, objects, nodes)
        finally:
            await self._clean_up()
        if self._settings.label:
            await self._label(outcomes)
        return outcomes

    async def _node(self, name: str) -> Json:
        return await call(f"read Node {name}", self._api.read_node, name)

    async def _round(
        self, number: int, groups: list[Group], objects: list[Json], nodes: dict[str, Json]
    ) -> list[Outcome]:
        names = {group_name(self._settings.options, g) for g in groups}
        for obj in objects[1:]:
            if obj["metadata"]["labels"].get(keys.ACCEPTANCE_GROUP) in names:
                await self._create(obj)
        phases = await self._wait(number, groups)
        outcomes = [await self._judge(g, phases.get(g.name), nodes) for g in groups]
        await self._clean_up(keep_secret=True)
        return outcomes

    async def _wait(self, number: int, groups: list[Group]) -> dict[str, str]:
        deadline = time.monotonic() + self._settings.round_timeout
        shown = ""
        while True:
            phases = {g.name: await self._phase(self._launcher(g)) for g in groups}
            line = f"round {number}: " + ", ".join(f"{k} {v}" for k, v in sorted(phases.items()))
            if line != shown:
                print(line, file=self._out, flush=True)
                shown = line
            if all(p in FINISHED for p in phases.values()) or time.monotonic() > deadline:
                return phases
            await asyncio.sleep(self._settings.poll)

    def _launcher(self, group: Group) -> str:
        return f"{group_name(self._settings.options, group)}-launcher"

    async def _phase(self, pod: str) -> str:
        namespace = self._settings.options.namespace
        try:
            obj = await call(f"read Pod {pod}", self._api.read_namespaced_pod, pod, namespace)
        except NotFound:
            return "Missing"
        return str((obj.get("status") or {}).get("phase") or "Pending")

    async def _judge(self, group: Group, phase: str | None, nodes: dict[str, Json]) -> Outcome:
        outcome = Outcome(group)
        if phase not in FINISHED:
            outcome.reasons.append(f"the test did not finish in time (launcher {phase})")
            return outcome
        text = await self._log(self._launcher(group))
        try:
            run = nccl_tests.parse(text)
        except nccl_tests.Unreadable as e:
            outcome.reasons.append(f"no nccl-tests result in the launcher's log: {e}")
            return outcome
        expected = self._expected(group, nodes)
        outcome.answer = verdict.judge(run, nccl_log.analyze(text), expected)
        if self._settings.options.soak_seconds:
            outcome.reasons += verdict.soak_reasons(run)
            outcome.reasons += await self._flaps(group, nodes)
        return outcome

    def _expected(self, group: Group, nodes: dict[str, Json]) -> verdict.Expectation:
        if self._settings.min_busbw is not None:
            return verdict.Expectation(self._settings.min_busbw, "--min-busbw")
        found = [_topology(nodes[n]) for n in group.nodes]
        known = [verdict.from_topology(t, self._settings.fraction) for t in found if t]
        if not known:
            return verdict.Expectation(None)
        return min(known, key=lambda e: e.busbw or 0.0)

    async def _flaps(self, group: Group, nodes: dict[str, Json]) -> list[str]:
        reasons = []
        for name in group.nodes:
            before, after = _topology(nodes[name]), _topology(await self._node(name))
            if before and after:
                reasons += verdict.link_flaps(before, after, name)
        return reasons

    async def _log(self, pod: str) -> str:
        namespace = self._settings.options.namespace
        read = self._api.read_namespaced_pod_log
        async with stream(f"read log of Pod {pod}", read, pod, namespace) as response:
            return (await response.read()).decode(errors="replace")

    async def _create(self, obj: Json) -> None:
        kind, name = obj["kind"], obj["metadata"]["name"]
        namespace = obj["metadata"]["namespace"]
        method = getattr(self._api, f"create_namespaced_{kind.lower()}")
        await call(f"create {kind} {name}", method, namespace, obj)
        self._created.append((kind, name))

    async def _clean_up(self, keep_secret: bool = False) -> None:
        """Delete what was created, newest first; the run's Secret stays while rounds remain."""
        namespace = self._settings.options.namespace
        kept = [c for c in self._created if keep_secret and c[0] == "Secret"]
        for kind, name in reversed(self._created):
            if (kind, name) not in kept:
                method = getattr(self._api, f"delete_namespaced_{kind.lower()}")
                with contextlib.suppress(NotFound):
                    await call(f"delete {kind} {name}", method, name, namespace)
        self._created = kept

    async def _label(self, outcomes: list[Outcome]) -> None:
        failed = {n for o in outcomes if not o.passed for n in o.group.nodes}
        stamp = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        for name in self._settings.nodes:
            value = keys.ACCEPTANCE_FAILED if name in failed else keys.ACCEPTANCE_PASSED
            patch = {
                "metadata": {
                    "labels": {keys.ACCEPTANCE: value},
                    "annotations": {keys.ACCEPTANCE_TIME: stamp},
                }
            }
            await call(
                f"patch Node {name}", self._api.patch_node, name, patch, _content_type=MERGE_PATCH
            )


def _labels(node: Json) -> dict[str, str]:
    return dict(node["metadata"].get("labels") or {})


def _topology(node: Json) -> Topology | None:
    text = (node["metadata"].get("annotations") or {}).get(keys.TOPOLOGY)
    if text is None:
        return None
    try:
        return decode(text)
    except (ValidationError, ValueError):
        return None
