"""pytest fixtures for the fake apiserver; tests/conftest.py re-exports them to every test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from testbed.fakeapi.server import FakeApiServer


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    """A started FakeApiServer."""
    async with FakeApiServer() as server:
        yield server


@pytest.fixture
async def core_v1(fake_api: FakeApiServer) -> AsyncIterator[Any]:
    """A kubernetes-asyncio CoreV1Api talking to `fake_api`."""
    async with fake_api.api_client() as api:
        yield client.CoreV1Api(api)
