"""The preempt verb over HTTP, against kube-scheduler's wire types and rules
(k8s.io/kube-scheduler/extender/v1 ExtenderPreemptionArgs/Result; pkg/scheduler/extender.go
ProcessPreemption and convertToVictims; preemption.go callExtenders): victims only on their own
node, never a node with no victims, UIDs in the Meta form, and no node for a gang member. A
fuzzed body never gets a 5xx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from extender.protocol import MetaVictims, ProtocolError, decode_preemption, preemption_result
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.pod_strategies import JSON_VALUES, examples, mutated
from testbed.clustergen.dra import dra_form
from tests.extender.test_app import Client, serving


def running(name: str, node: str, gpus: int, uid: str, **extra: Any) -> Json:
    pod = nodes.pod(name, gpus=gpus, node_name=node, phase="Running", **extra)
    pod["metadata"]["uid"] = uid
    return pod


NODES = [nodes.node(f"gpu-{i}", nodes.hgx()) for i in range(1, 5)]
GANG = {keys.GANG: "train", keys.GANG_SIZE: "2"}
PODS = [
    running("solo-1", "gpu-1", 8, "uid-solo-1"),
    running("solo-2a", "gpu-2", 4, "uid-solo-2a"),
    running("solo-2b", "gpu-2", 4, "uid-solo-2b"),
    running("member-3", "gpu-3", 8, "uid-member-3", annotations=GANG),
    running("member-4", "gpu-4", 8, "uid-member-4", annotations=GANG),
]
PREEMPTOR = nodes.pod("urgent")
PREEMPTOR["spec"]["priority"] = 100


def meta(*uids: str, violations: int = 0) -> Json:
    return {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": violations}


def args(pod: Json, victims: Json) -> Json:
    return {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims}


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    # The preemptor is in the cache: the verb acts only for pods the apiserver has shown.
    async with serving([*NODES, *PODS, PREEMPTOR]) as serving_client:
        yield serving_client


async def test_nodes_whose_victims_free_enough_are_kept_with_their_victims(
    client: Client,
) -> None:
    victims = {"gpu-1": meta("uid-solo-1"), "gpu-2": meta("uid-solo-2a", violations=1)}
    status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    # gpu-2 with only one of its two pods gone has 4 GPUs free: the pod needs 8.
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {"gpu-1": meta("uid-solo-1")}})


@pytest.mark.parametrize(
    ("victims", "kept"),
    [
        (
            {"gpu-1": meta("uid-solo-1"), "gpu-2": meta("uid-solo-2a", violations=1)},
            {"gpu-1": meta("uid-solo-1")},
        ),
        (
            {"gpu-2": meta("uid-solo-2a", "uid-solo-2b"), "gpu-3": meta("uid-member-3")},
            {"gpu-2": meta("uid-solo-2a", "uid-solo-2b")},
        ),
    ],
)
async def test_dra_nodes_are_kept_as_their_device_plugin_form(victims: Json, kept: Json) -> None:
    """The same cluster with every GPU and NIC a DRA device held by the pods' generated claims
    (testbed/clustergen/dra.py), and the preemptor asking through a claim template: a victim's
    claim frees its devices (kubernetes pkg/controller/resourceclaim/controller.go, syncClaim),
    so the same nodes are kept with the same victims."""
    found: dict[int, tuple[int, Any]] = {}
    for objects in ([*NODES, *PODS, PREEMPTOR], dra_form([*NODES, *PODS, PREEMPTOR])):
        pod = next(o for o in objects if o["metadata"]["name"] == "urgent")
        async with serving(objects) as client:
            found[len(found)] = await client.post("preempt", args(pod, victims))
    assert found[0] == found[1] == (200, {"NodeNameToMetaVictims": kept})


async def test_victims_not_on_their_node_are_dropped_and_an_empty_node_is_never_answered(
    client: Client,
) -> None:
    victims = {"gpu-1": meta("uid-solo-2a"), "gpu-2": meta("uid-solo-2a", "uid-solo-2b")}
    status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    expected = {"gpu-2": meta("uid-solo-2a", "uid-solo-2b")}
    assert (status, answer) == (200, {"NodeNameToMetaVictims": expected})


async def test_nodes_without_gang_victims_are_preferred(client: Client) -> None:
    victims = {"gpu-1": meta("uid-solo-1"), "gpu-3": meta("uid-member-3")}
    status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {"gpu-1": meta("uid-solo-1")}})


async def test_a_gang_member_is_kept_as_a_victim_where_nothing_else_would_do(
    client: Client,
) -> None:
    victims = {"gpu-3": meta("uid-member-3")}
    status, answer = await client.post("preempt", args(PREEMPTOR, victims))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": victims})


async def test_a_gang_member_gets_no_node(client: Client) -> None:
    member = nodes.pod("urgent-0", annotations={keys.GANG: "urgent", keys.GANG_SIZE: "2"})
    status, answer = await client.post("preempt", args(member, {"gpu-1": meta("uid-solo-1")}))
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {}})


async def test_the_full_victims_form_is_read_for_its_uids(client: Client) -> None:
    body = {
        "Pod": PREEMPTOR,
        "NodeNameToVictims": {"gpu-1": {"Pods": [PODS[0]], "NumPDBViolations": 0}},
        "NodeNameToMetaVictims": None,
    }
    status, answer = await client.post("preempt", body)
    assert (status, answer) == (200, {"NodeNameToMetaVictims": {"gpu-1": meta("uid-solo-1")}})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"Pod": PREEMPTOR, "NodeNameToMetaVictims": []}, "must be an object of node names"),
        (
            {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"gpu-1": {"Pods": [{}]}}},
            "ExtenderPreemptionArgs.NodeNameToMetaVictims[gpu-1]: a victim without a UID",
        ),
        (
            {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"gpu-1": {"Pods": "x"}}},
            "must be {Pods: [...], NumPDBViolations: n}",
        ),
        ({"NodeNameToMetaVictims": {}}, "ExtenderArgs.Pod must be a Pod object with metadata"),
    ],
)
async def test_malformed_bodies_get_a_400_that_says_what_is_wrong(
    client: Client, body: Json, message: str
) -> None:
    status, answer = await client.post("preempt", body)
    assert status == 400
    assert message in answer["error"]


def test_the_wire_forms_round_trip_in_pascal_case_any_casing_read() -> None:
    body = json.dumps(
        {"pod": PREEMPTOR, "nodeNameToMetaVictims": {"n": {"pods": [{"uid": "u"}]}}}
    ).encode()
    decoded = decode_preemption(body)
    assert decoded.victims == {"n": MetaVictims(("u",), 0)}
    assert preemption_result({"n": MetaVictims(("u",), 2), "empty": MetaVictims(())}) == {
        "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "u"}], "NumPDBViolations": 2}}
    }
    with pytest.raises(ProtocolError):
        decode_preemption(b"[]")


FUZZ = settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(body=mutated(args(PREEMPTOR, {"gpu-1": meta("uid-solo-1")})) | JSON_VALUES)
async def test_mangled_preemption_args_never_fail_the_extender(client: Client, body: Any) -> None:
    status, answer = await client.post("preempt", json.dumps(body).encode())
    assert status in (200, 400), answer
    if status == 200:
        assert set(answer) == {"NodeNameToMetaVictims"}
        for victims in answer["NodeNameToMetaVictims"].values():
            assert victims["Pods"], "never a node without victims"
