"""A LiveSource following the fake apiserver, optional resources (DRA, workloads) included, for
tests that change objects there and watch the cluster model follow."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from kubernetes_asyncio import client

from extender.cluster.live import LiveSource
from kube_rdma.core.tasks import cancelled
from testbed.fakeapi import FakeApiServer, eventually


@contextlib.asynccontextmanager
async def following(api: FakeApiServer) -> AsyncIterator[LiveSource]:
    """The source running, read once (ready), until the block ends."""
    async with api.api_client() as api_client:
        source = LiveSource(
            client.CoreV1Api(api_client),
            custom_api=client.CustomObjectsApi(api_client),
            initial_backoff=0.01,
            recheck_absent=0.05,
        )
        task = asyncio.create_task(source.run())
        try:
            await eventually(source.ready)
            yield source
        finally:
            await cancelled(task)
