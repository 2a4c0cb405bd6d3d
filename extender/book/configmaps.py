"""Gang plan records kept in ConfigMaps (extender/book/records.py says what and why).

They are listed and watched, so that a standby extender holds them as they stand when it takes
over, and written in the background, one write per plan made or dropped: the planner answers
kube-scheduler's filter without waiting for the apiserver. A member's bind waits until its
gang's record is written (`flush`): no member of a gang binds while its plan is known to this
process alone. Writes to one gang follow each other in order; a write that finds the record
changed by someone else (409) reads it again and writes over it, since this process serves now;
a removal is conditional on the version this process last saw, so it never removes a record
that another process has since taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from extender.book.records import PlanRecord, decode, encode, record_name
from extender.book.reservations import GangKey
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, Conflict, NotFound
from kube_rdma.kube.reflector import Reflector

log = logging.getLogger("kube_rdma.extender")

WRITE_TIMEOUT_SECONDS = 2.0
"""Per write, below the bind budget a member's bind waits for it in."""


class ConfigMapRecords:
    """The records in `namespace`, through `core_api` (a kubernetes-asyncio CoreV1Api), written
    as `identity`."""

    def __init__(self, core_api: Any, namespace: str, identity: str) -> None:
        self._api, self._namespace, self.identity = core_api, namespace, identity
        self._saved: dict[GangKey, PlanRecord] = {}
        self._versions: dict[GangKey, str] = {}
        self._foreign = 0
        self._wanted: dict[GangKey, PlanRecord | None] = {}
        self._writers: dict[GangKey, asyncio.Task[bool]] = {}
        self.reflector = Reflector(
            functools.partial(
                core_api.list_namespaced_config_map,
                namespace,
                label_selector=f"{keys.GANG_PLAN}=true",
            ),
            self._replace,
            self._event,
            "gang plan records",
        )

    # Reading

    def ready(self) -> bool:
        return self.reflector.synced.is_set()

    def saved(self) -> Mapping[GangKey, PlanRecord]:
        return self._saved

    @property
    def foreign_changes(self) -> int:
        return self._foreign

    async def run(self) -> None:
        await self.reflector.run()

    def _replace(self, items: list[Json]) -> None:
        self._saved.clear()
        self._versions.clear()
        for item in items:
            self._event("ADDED", item)

    def _event(self, kind: str, obj: Json) -> None:
        record = decode(obj)
        if record is None:
            return
        if record.holder != self.identity:
            self._foreign += 1
        if kind == "DELETED":
            self._saved.pop(record.gang, None)
            self._versions.pop(record.gang, None)
        else:
            self._saved[record.gang] = record
            self._versions[record.gang] = str(obj["metadata"]["resourceVersion"])

    # Writing

    def put(self, record: PlanRecord) -> None:
        self._want(record.gang, replace(record, holder=self.identity))

    def remove(self, gang: GangKey) -> None:
        self._want(gang, None)

    async def flush(self, gang: GangKey) -> bool:
        writer = self._writers.get(gang)
        if writer is None:
            return True
        if not await asyncio.shield(writer):
            self._want(gang, self._wanted.get(gang))  # try once more
            return await asyncio.shield(self._writers[gang])
        return True

    def _want(self, gang: GangKey, record: PlanRecord | None) -> None:
        self._wanted[gang] = record
        writer = self._writers.get(gang)
        if writer is None or writer.done():
            task = asyncio.get_running_loop().create_task(self._write_wanted(gang))
            self._writers[gang] = task

    async def _write_wanted(self, gang: GangKey) -> bool:
        """Write what is wanted of the gang's record until the last wish is written."""
        while True:
            wanted = self._wanted.get(gang)
            try:
                if wanted is None:
                    await self._delete(gang)
                else:
                    await self._write(wanted)
            except ApiError as e:
                log.warning("gang %s/%s: plan record not written: %s", *gang, e)
                return False
            if self._wanted.get(gang, None) == wanted:
                if wanted is None:
                    self._wanted.pop(gang, None)
                return True

    async def _write(self, record: PlanRecord) -> None:
        body = encode(record, self._namespace)
        version = self._versions.get(record.gang)
        try:
            if version is None:
                written = await self._call(
                    "create", self._api.create_namespaced_config_map, self._namespace, body
                )
            else:
                body["metadata"]["resourceVersion"] = version
                written = await self._replace_call(body)
        except (Conflict, NotFound):
            current = await self._read(record.gang)  # someone else wrote it meanwhile
            if current is None:
                written = await self._call(
                    "create", self._api.create_namespaced_config_map, self._namespace, body
                )
            else:
                body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                written = await self._replace_call(body)
        self._versions[record.gang] = str(written["metadata"]["resourceVersion"])

    async def _delete(self, gang: GangKey) -> None:
        version = self._versions.get(gang)
        options = {"preconditions": {"resourceVersion": version}} if version else {}
        # NotFound: gone already; Conflict: taken over by another process, not ours to remove.
        with contextlib.suppress(NotFound, Conflict):
            await self._call(
                "delete",
                self._api.delete_namespaced_config_map,
                record_name(gang),
                self._namespace,
                body=options,
            )
        self._versions.pop(gang, None)

    async def _read(self, gang: GangKey) -> Json | None:
        try:
            return await self._call(
                "read", self._api.read_namespaced_config_map, record_name(gang), self._namespace
            )
        except NotFound:
            return None

    async def _replace_call(self, body: Json) -> Json:
        name = body["metadata"]["name"]
        return await self._call(
            "update", self._api.replace_namespaced_config_map, name, self._namespace, body
        )

    async def _call(self, verb: str, method: Any, *args: Any, **kwargs: Any) -> Json:
        return await call(
            f"{verb} gang plan record",
            method,
            *args,
            request_timeout=WRITE_TIMEOUT_SECONDS,
            **kwargs,
        )
