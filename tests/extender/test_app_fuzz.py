"""The extender over HTTP under generated input: /filter, /prioritize and /bind never answer 5xx;
a malformed body gets a 400 saying what is wrong, and any other answer is a well-formed
ExtenderFilterResult, HostPriorityList or ExtenderBindingResult naming only nodes that were sent.

Examples per property: `KUBE_RDMA_FUZZ_EXAMPLES` (testbed/builders/pod_strategies.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.cluster.trim import trim_pod
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.pod_strategies import JSON_VALUES, examples, mutated, valid_pods
from tests.extender.test_app import NAMES, NODES, PODS, Client, serving

FUZZ = settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NODE_LIST = {"apiVersion": "v1", "kind": "NodeList", "items": NODES}


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with serving([*NODES, *PODS]) as serving_client:
        yield serving_client


async def post(client: Client, verb: str, body: Any) -> tuple[int, Any]:
    return await client.post(verb, json.dumps(body).encode())  # integers past 64 bits too


def sent_names(args: Any) -> set[str]:
    if isinstance(args.get("NodeNames"), list):
        return set(args["NodeNames"])
    return {n["metadata"]["name"] for n in NODES}


def check_filter(args: Any, answer: Json) -> None:
    assert set(answer) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }
    if answer["Error"]:
        # A gang member the cache lacks is planned for by nothing: retried, with no node named.
        assert "is not in the extender's cache yet" in answer["Error"]
        assert answer["NodeNames"] == []
    named = [*answer["NodeNames"], *answer["FailedNodes"], *answer["FailedAndUnresolvableNodes"]]
    assert set(named) <= sent_names(args)
    assert all(isinstance(r, str) and r for r in answer["FailedNodes"].values())


def check_prioritize(args: Any, answer: Any) -> None:
    assert isinstance(answer, list)
    assert {h["Host"] for h in answer} <= sent_names(args)
    assert all(isinstance(h["Score"], int) and 0 <= h["Score"] <= 10 for h in answer)


CHECKS = {"filter": check_filter, "prioritize": check_prioritize}


def check(verb: str, args: Any, status: int, answer: Any) -> None:
    if status == 400:
        assert isinstance(answer["error"], str)
        assert answer["error"]
        return
    assert status == 200, answer
    CHECKS[verb](args, answer)


def args_for(pod: Json, names: bool) -> Json:
    return {"Pod": pod, "NodeNames": NAMES} if names else {"Pod": pod, "Nodes": NODE_LIST}


@FUZZ
@given(pod=valid_pods(), verb=st.sampled_from(sorted(CHECKS)), names=st.booleans())
async def test_valid_pods_get_well_formed_answers(
    client: Client, pod: Json, verb: str, names: bool
) -> None:
    args = args_for(pod, names)
    # In the cache, as the apiserver would have shown it: the verbs act only for such pods
    # (a pod without a name, which no apiserver holds, stays out).
    cluster = client.source.cluster
    key = (pod["metadata"]["namespace"], pod["metadata"].get("name"))
    before = cluster.pod(*key) if key[1] else None
    if key[1]:
        cluster.upsert_pod(trim_pod(pod))
    try:
        status, answer = await post(client, verb, args)
    finally:
        if key[1]:
            cluster.delete_pod(key)
        if before is not None:
            cluster.upsert_pod(before)
    assert status == 200, answer
    assert verb != "filter" or not key[1] or answer["Error"] == ""
    CHECKS[verb](args, answer)


@FUZZ
@given(data=st.data(), verb=st.sampled_from(sorted(CHECKS)))
async def test_mangled_args_never_fail_the_extender(
    client: Client, data: st.DataObject, verb: str, caplog: pytest.LogCaptureFixture
) -> None:
    pod = data.draw(valid_pods() | st.just(nodes.pod("worker-0", node_settings=True)))
    if data.draw(st.booleans()):
        args = data.draw(mutated(args_for(pod, names=True)))
    else:  # the NodeList as kube-scheduler sends it, around a mangled pod
        args = {**data.draw(mutated({"Pod": pod})), "Nodes": NODE_LIST}
    check(verb, args, *await post(client, verb, args))
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    caplog.clear()


BINDING = {
    "PodName": "worker-1",
    "PodNamespace": "team-a",
    "PodUID": "uid-worker-1",
    "Node": "gpu-1",
}


@FUZZ
@given(args=mutated(BINDING) | JSON_VALUES)
async def test_mangled_bindings_never_fail_the_extender(client: Client, args: Any) -> None:
    status, answer = await post(client, "bind", args)
    assert status in (200, 400), answer
    if status == 200:
        assert set(answer) == {"Error"}
        assert isinstance(answer["Error"], str)
    else:
        assert answer["error"].startswith(("ExtenderBindingArgs needs", "body is a JSON"))
