"""Nominations through the apiserver (the fake one, over HTTP): the status subresource patched
under a test of the pod's uid, so a pod recreated under the same name is never nominated; a
nomination taken back; a pod gone is NominationFailed."""

from __future__ import annotations

from typing import Any

import pytest

from extender.cluster.nominations import LiveNominations, NominationFailed
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer


async def test_a_pending_pod_is_nominated_and_the_nomination_taken_back(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    pod = fake_api.create("pods", nodes.pod("m-0"), "team-a")
    nominations = LiveNominations(core_v1)
    await nominations.nominate("team-a", "m-0", pod["metadata"]["uid"], "gpu-7")
    stored = fake_api.get("pods", "m-0", "team-a")
    assert stored["status"]["nominatedNodeName"] == "gpu-7"
    assert stored["spec"] == pod["spec"], "the status subresource writes nothing else"
    [patch] = [r for r in fake_api.requests if r.method == "PATCH"]
    assert patch.path == "/api/v1/namespaces/team-a/pods/m-0/status"
    await nominations.nominate("team-a", "m-0", pod["metadata"]["uid"], None)
    assert not fake_api.get("pods", "m-0", "team-a")["status"].get("nominatedNodeName")


async def test_a_pod_of_another_uid_is_not_nominated(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("pods", nodes.pod("m-0"), "team-a")
    with pytest.raises(NominationFailed, match="pod team-a/m-0: ") as refused:
        await LiveNominations(core_v1).nominate("team-a", "m-0", "the-one-before", "gpu-7")
    assert refused.value.gone
    assert "nominatedNodeName" not in fake_api.get("pods", "m-0", "team-a")["status"]


async def test_a_write_refused_for_a_reason_of_its_own_is_not_a_pod_gone(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    pod = fake_api.create("pods", nodes.pod("m-0"), "team-a")
    fake_api.fail("PATCH", "/api/v1/namespaces/team-a/pods/m-0/status", 403)
    with pytest.raises(NominationFailed, match="pod team-a/m-0: ") as refused:
        await LiveNominations(core_v1).nominate("team-a", "m-0", pod["metadata"]["uid"], "gpu-7")
    assert not refused.value.gone


async def test_a_pod_gone_is_not_nominated(fake_api: FakeApiServer, core_v1: Any) -> None:
    with pytest.raises(NominationFailed, match="pod team-a/gone: "):
        await LiveNominations(core_v1).nominate("team-a", "gone", "uid", "gpu-7")
