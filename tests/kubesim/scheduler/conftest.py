"""The recording stub extender, served on a loopback port next to the fake apiserver."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from testbed.fakeapi import FakeApiServer
from testbed.net import serving
from tests.kubesim.scheduler.stub_extender import StubExtender


@pytest.fixture
async def stub(fake_api: FakeApiServer) -> AsyncIterator[tuple[StubExtender, str]]:
    extender = StubExtender(fake_api)
    async with serving(extender.app()) as url:
        yield extender, url
