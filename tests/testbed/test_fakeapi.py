"""The fake apiserver against kubernetes-asyncio's generated clients, models and Watch helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kube_rdma.core.objects import Json
from testbed.fakeapi import FakeApiServer, kubeconfig
from testbed.net import free_port, listening


def pod(name: str, node: str = "", labels: dict[str, str] | None = None) -> Json:
    spec: Json = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


async def test_create_read_list_with_models(fake_api: FakeApiServer, core_v1: Any) -> None:
    created = await core_v1.create_namespace({"metadata": {"name": "a", "labels": {"x": "1"}}})
    assert created.metadata.resource_version == "101"
    assert created.kind == "Namespace"
    await core_v1.create_namespace({"metadata": {"name": "b"}})
    listed = await core_v1.list_namespace(label_selector="x=1")
    assert [n.metadata.name for n in listed.items] == ["a"]
    assert listed.metadata.resource_version == "102"
    assert (await core_v1.list_namespace(label_selector="x!=1")).items[0].metadata.name == "b"
    assert (await core_v1.read_namespace("b")).metadata.uid == fake_api.get("namespaces", "b")[
        "metadata"
    ]["uid"]


async def test_not_found_status(core_v1: Any) -> None:
    with pytest.raises(ApiException) as e:
        await core_v1.read_namespace("nope")
    assert e.value.status == 404
    assert orjson.loads(e.value.body or b"") == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'namespaces "nope" not found',
        "reason": "NotFound",
        "code": 404,
        "details": {"name": "nope", "kind": "namespaces"},
    }


async def test_conflicts_and_generate_name(fake_api: FakeApiServer, core_v1: Any) -> None:
    await core_v1.create_namespaced_pod("ns", pod("p"))
    with pytest.raises(ApiException) as e:
        await core_v1.create_namespaced_pod("ns", pod("p"))
    assert (e.value.status, orjson.loads(e.value.body or b"")["reason"]) == (409, "AlreadyExists")
    generated = await core_v1.create_namespaced_pod(
        "ns", {"metadata": {"generateName": "w-"}, "spec": pod("x")["spec"]}
    )
    assert generated.metadata.name.startswith("w-")
    assert len(generated.metadata.name) == 7
    stale = pod("p") | {"metadata": {"name": "p", "resourceVersion": "1"}}
    with pytest.raises(ApiException) as e:
        await core_v1.replace_namespaced_pod("p", "ns", stale)
    assert orjson.loads(e.value.body or b"")["message"].startswith(
        'Operation cannot be fulfilled on pods "p"'
    )
    current = fake_api.get("pods", "p", "ns")
    current["metadata"]["labels"] = {"y": "2"}
    replaced = await core_v1.replace_namespaced_pod("p", "ns", current)
    assert replaced.metadata.labels == {"y": "2"}


async def test_patches(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", {"metadata": {"name": "n1", "labels": {"a": "1"}}})
    await core_v1.patch_node("n1", {"metadata": {"labels": {"a": None, "b": "2"}}})
    await core_v1.patch_node(
        "n1", [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}]
    )
    await core_v1.patch_node(
        "n1",
        {"spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]}},
        _content_type="application/merge-patch+json",
    )
    node = fake_api.get("nodes", "n1")
    assert node["metadata"]["labels"] == {"b": "2"}
    assert node["metadata"]["annotations"] == {"k": "v"}
    assert node["spec"]["taints"] == [{"key": "t", "effect": "NoSchedule"}]
    patches = [(r.content_type, r.body) for r in fake_api.requests if r.method == "PATCH"]
    assert patches == [
        ("application/strategic-merge-patch+json", {"metadata": {"labels": {"a": None, "b": "2"}}}),
        (
            "application/json-patch+json",
            [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
        ),
        (
            "application/merge-patch+json",
            {"spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]}},
        ),
    ]
    with pytest.raises(ApiException) as e:
        await core_v1.patch_node("n1", [{"op": "test", "path": "/metadata/name", "value": "n2"}])
    assert e.value.status == 422
    with pytest.raises(ApiException) as e:
        await core_v1.patch_node("n1", {"metadata": {"resourceVersion": "1"}})
    assert e.value.status == 409


async def test_binding(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("pods", pod("p"), "ns")
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    response = await core_v1.create_namespaced_pod_binding(
        "p", "ns", binding, _preload_content=False
    )
    assert response.status == 201
    assert orjson.loads(await response.read())["status"] == "Success"
    bound = fake_api.get("pods", "p", "ns")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    response = await core_v1.create_namespaced_binding("ns", binding, _preload_content=False)
    assert response.status == 409
    body = orjson.loads(await response.read())
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )


async def test_field_selector(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("pods", pod("a", "n1"), "ns1")
    fake_api.create("pods", pod("b"), "ns2")
    fake_api.create("pods", pod("c", "n2"), "ns1")

    def names(listed: Any) -> list[str]:
        return [p.metadata.name for p in listed.items]

    assert names(await core_v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=")) == [
        "b"
    ]
    assert names(await core_v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")) == [
        "a"
    ]
    assert names(await core_v1.list_namespaced_pod("ns1", field_selector="metadata.name!=a")) == [
        "c"
    ]
    assert names(await core_v1.list_pod_for_all_namespaces()) == ["a", "c", "b"]


async def test_watch_helper(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("namespaces", {"metadata": {"name": "a"}})
    since = str(fake_api.version)
    fake_api.create("namespaces", {"metadata": {"name": "b"}})
    fake_api.patch("namespaces", "b", {"metadata": {"labels": {"l": "1"}}})
    fake_api.delete("namespaces", "a")
    seen = []
    async with watch.Watch().stream(
        core_v1.list_namespace, resource_version=since, timeout_seconds=1
    ) as stream:
        async for event in stream:
            seen.append(
                (
                    event["type"],
                    event["object"].metadata.name,
                    event["object"].metadata.resource_version,
                )
            )
    assert seen == [("ADDED", "b", "102"), ("MODIFIED", "b", "103"), ("DELETED", "a", "104")]


async def test_watch_expired_and_failures(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("namespaces", {"metadata": {"name": "a"}})
    fake_api.compact()
    response = await core_v1.list_namespace(
        watch=True, resource_version="100", _preload_content=False
    )
    assert orjson.loads(await response.content.readline()) == {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "too old resource version: 100 (101)",
            "reason": "Expired",
            "code": 410,
        },
    }
    assert await response.content.readline() == b""
    fake_api.fail("GET", "/api/v1/namespaces", 503, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as e:
            await core_v1.list_namespace()
        assert e.value.status == 503
    assert len((await core_v1.list_namespace()).items) == 1


async def test_watch_selector_transitions_and_bookmarks(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("pods", pod("p"), "ns")
    response = await core_v1.list_namespaced_pod(
        "ns",
        watch=True,
        field_selector="spec.nodeName=",
        allow_watch_bookmarks=True,
        _preload_content=False,
    )

    async def line() -> bytes:
        read: bytes = await response.content.readline()
        return read

    assert orjson.loads(await line())["type"] == "ADDED"  # synthetic, resourceVersion unset
    fake_api.patch("pods", "p", {"spec": {"nodeName": "n1"}}, namespace="ns")
    event = orjson.loads(await line())
    assert (
        event["type"],
        event["object"]["spec"].get("nodeName"),
        event["object"]["metadata"]["resourceVersion"],
    ) == ("DELETED", None, "102")
    fake_api.bookmark()
    assert orjson.loads(await line()) == {
        "type": "BOOKMARK",
        "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "102"}},
    }
    fake_api.end_watches()
    assert await line() == b""


async def test_periodic_bookmarks() -> None:
    async with FakeApiServer(bookmark_interval=0.05) as server, server.api_client() as api:
        response: Any = await client.CoreV1Api(api).list_node(
            watch=True,
            resource_version="100",
            allow_watch_bookmarks=True,
            timeout_seconds=1,
            _preload_content=False,
        )
        assert orjson.loads(await response.content.readline())["type"] == "BOOKMARK"


async def test_restore_keeps_identity_and_a_kubeconfig_reaches_the_server(tmp_path: Path) -> None:
    node = {"metadata": {"name": "n1", "uid": "u-1", "creationTimestamp": "2024-06-03T00:00:00Z"}}
    async with FakeApiServer() as server:
        server.restore([("nodes", node), ("pods", pod("p"))])
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        api = await config.new_client_from_config(config_file=str(path))
        async with api:
            listed = await client.CoreV1Api(api).list_node()
        restored = server.get("pods", "p", "default")
    assert [
        (n.metadata.name, n.metadata.uid, n.metadata.resource_version) for n in listed.items
    ] == [("n1", "u-1", "101")]
    assert listed.items[0].metadata.creation_timestamp.isoformat() == "2024-06-03T00:00:00+00:00"
    assert (restored["metadata"]["namespace"], restored["metadata"]["resourceVersion"]) == (
        "default",
        "102",
    )
    assert orjson.loads(path.read_bytes()) == kubeconfig(server.host)
    assert not path.with_name("kubeconfig.partial").exists()


@pytest.mark.parametrize(
    ("host", "url"),
    [("127.0.0.1", "http://127.0.0.1:{port}"), ("0.0.0.0", "http://127.0.0.1:{port}")],
)
async def test_start_on_a_given_address(host: str, url: str) -> None:
    port = free_port()
    server = FakeApiServer()
    await server.start(host, port)
    try:
        assert server.host == url.format(port=port)
        assert listening(port)
    finally:
        await server.stop()


async def test_two_groups_may_serve_one_plural() -> None:
    from kubernetes_asyncio import client

    from testbed.fakeapi import RESOURCES, WORKLOAD_RESOURCES

    async with FakeApiServer({**RESOURCES, **WORKLOAD_RESOURCES}) as api, api.api_client() as c:
        custom = client.CustomObjectsApi(c)
        for group, version in (("batch", "v1"), ("batch.volcano.sh", "v1alpha1")):
            body = {"apiVersion": f"{group}/{version}", "kind": "Job", "metadata": {"name": group}}
            await custom.create_namespaced_custom_object(group, version, "a", "jobs", body)
        listed = await custom.list_cluster_custom_object("batch.volcano.sh", "v1alpha1", "jobs")
        assert [o["metadata"]["name"] for o in listed["items"]] == ["batch.volcano.sh"]
        assert [o["metadata"]["name"] for o in api.objects("jobs.batch")] == ["batch"]
        with pytest.raises(client.ApiException) as missing:
            await custom.get_namespaced_custom_object(
                "batch", "v1", "a", "jobs", "batch.volcano.sh"
            )
        assert missing.value.status == 404
        assert (
            orjson.loads(missing.value.body or b"{}")["message"]
            == 'jobs.batch "batch.volcano.sh" not found'
        )


async def test_leases_update_with_optimistic_concurrency(fake_api: FakeApiServer) -> None:
    async with fake_api.api_client() as api_client:
        leases: Any = client.CoordinationV1Api(api_client)
        lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
        created = await leases.create_namespaced_lease("ns", lease)
        assert (created.kind, created.api_version) == ("Lease", "coordination.k8s.io/v1")
        taken = {
            "metadata": {"name": "l", "resourceVersion": "101"},
            "spec": {"holderIdentity": "b"},
        }
        updated = await leases.replace_namespaced_lease("l", "ns", taken)
        assert (updated.spec.holder_identity, updated.metadata.resource_version) == ("b", "102")
        with pytest.raises(ApiException) as e:  # "a" read version 101 too: it lost the race
            await leases.replace_namespaced_lease(
                "l", "ns", lease | {"metadata": taken["metadata"]}
            )
        assert e.value.status == 409
        assert (await leases.read_namespaced_lease("l", "ns")).spec.holder_identity == "b"


async def test_delete_preconditions(fake_api: FakeApiServer, core_v1: Any) -> None:
    await core_v1.create_namespaced_config_map("ns", {"metadata": {"name": "c"}})  # 101
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="100"))
    with pytest.raises(ApiException) as e:
        await core_v1.delete_namespaced_config_map("c", "ns", body=stale)
    assert orjson.loads(e.value.body or b"")["message"] == (
        'Operation cannot be fulfilled on configmaps "c": Precondition failed: ResourceVersion '
        "in precondition: 100, ResourceVersion in object meta: 101"
    )
    current = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="101"))
    await core_v1.delete_namespaced_config_map("c", "ns", body=current)
    assert fake_api.objects("configmaps") == []
