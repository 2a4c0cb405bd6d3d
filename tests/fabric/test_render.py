"""`kube-rdma acceptance render`: which nodes test together, and objects that the apiserver
accepts, that kube-rdma's webhook prepares as training pods and that its extender places."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kubernetes_validate
import orjson
import pytest
import yaml
from aiohttp import web

from extender.app import Settings, create_app
from extender.cluster.snapshot import SnapshotSource
from fabric.plan import Group, Mode, plan
from fabric.render import Options, SshKey, parse_bytes, render
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from testbed.builders.nodes import hgx, node
from webhook.mutate import Target, mutate
from webhook.profiles.loader import parse_profiles

LEAVES = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}
KEY = SshKey("-----BEGIN OPENSSH PRIVATE KEY-----\n", "ssh-ed25519 AAAA kube-rdma-acceptance\n")
PROFILES = parse_profiles("profiles: {default: {}, ib8: {nccl: {requireIb: true}}}", "test")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            Mode.PAIRS,
            [
                Group("r0-0", 0, ("a1", "a2")),
                Group("r0-1", 0, ("b1", "b2")),
                Group("r1-0", 1, ("a3", "a1")),
                Group("r2-0", 2, ("a1", "b1")),
                Group("r2-1", 2, ("a2", "b2")),
                Group("r3-0", 3, ("a3", "b1")),
            ],
        ),
        (Mode.LEAF, [Group("leaf-A", 0, ("a1", "a2", "a3")), Group("leaf-B", 0, ("b1", "b2"))]),
        (Mode.ALL, [Group("all", 0, ("a1", "a2", "a3", "b1", "b2"))]),
    ],
)
def test_plans(mode: Mode, expected: list[Group]) -> None:
    assert plan(list(LEAVES), LEAVES, mode) == expected


def test_pairs_test_every_node_within_and_across_leaves() -> None:
    groups = plan(list(LEAVES), LEAVES, Mode.PAIRS)
    for name in LEAVES:
        partners = {n for g in groups if name in g.nodes for n in g.nodes if n != name}
        assert {LEAVES[p] == LEAVES[name] for p in partners} == {True, False}
    for number in {g.round for g in groups}:
        members = [n for g in groups if g.round == number for n in g.nodes]
        assert len(members) == len(set(members))


def test_pairs_on_one_leaf_skip_the_rounds_across() -> None:
    assert plan(["x", "y"], {}, Mode.PAIRS) == [Group("r0-0", 0, ("x", "y"))]


def test_bytes() -> None:
    assert parse_bytes("8:8G") == ("8", "8G")
    assert parse_bytes("1G") == ("1G", "1G")
    with pytest.raises(ValueError, match="give MIN:MAX"):
        parse_bytes("8:lots")


def objects(soak: int | None = None) -> list[Json]:
    options = Options(run="acc", namespace="fabric", profile="ib8", soak_seconds=soak)
    return render(options, plan(["a1", "b1"], LEAVES, Mode.ALL), KEY)


def test_render_is_valid_for_the_apiserver() -> None:
    rendered = objects()
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered] == [
        ("Secret", "acc-ssh"),
        ("Service", "acc-all"),
        ("Pod", "acc-all-w0"),
        ("Pod", "acc-all-w1"),
        ("Pod", "acc-all-launcher"),
    ]
    for obj in rendered:
        kubernetes_validate.validate(obj, "1.33.0", strict=True)
    worker = rendered[2]
    assert worker["metadata"]["annotations"] == {
        keys.PROFILE: "ib8",
        keys.DEBUG: "true",
        keys.GANG: "acc-all",
        keys.GANG_SIZE: "2",
        keys.ACCEPTANCE_ROUND: "0",
    }
    launcher = rendered[4]["spec"]["containers"][0]["command"][2]
    assert (
        "mpirun --allow-run-as-root --tag-output --bind-to none -np 16 -H "
        "w0.acc-all:8,w1.acc-all:8 --mca plm_rsh_args '-p 2222 -o StrictHostKeyChecking=no' "
        "/opt/nccl_tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 || rc=1"
    ) in launcher


def test_a_soak_repeats_the_largest_size() -> None:
    launcher = objects(soak=600)[4]["spec"]["containers"][0]["command"][2]
    assert "end=$(( $(date +%s) + 600 ))" in launcher
    assert "all_reduce_perf -b 8G -e 8G -f 2 -g 1 -n 50 || rc=1; done" in launcher


def test_the_webhook_prepares_the_workers_and_leaves_the_launcher() -> None:
    rendered = objects()
    worker = mutate(rendered[2], "ib8", PROFILES.profiles["ib8"], Target("fabric")).pod
    (container,) = worker["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"], env["NCCL_IB_DISABLE"]) == (
        "INFO",
        "INIT,NET",
        "0",
    )
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/hca": "1"}
    assert orjson.loads(worker["metadata"]["annotations"][keys.APPLIED])["profile"] == "ib8"
    kubernetes_validate.validate(worker, "1.33.0", strict=True)
    launcher = mutate(rendered[4], "ib8", PROFILES.profiles["ib8"], Target("fabric"))
    assert launcher.pod == rendered[4]


@contextlib.asynccontextmanager
async def extender(cluster: list[Json]) -> AsyncIterator[Any]:
    runner = web.AppRunner(
        create_app(Settings(require_acceptance=True), SnapshotSource(cluster)), access_log=None
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with aiohttp.ClientSession() as session:

            async def ask(path: str, body: Json | None = None) -> Any:
                method = session.post if body is not None else session.get
                async with method(base + path, data=orjson.dumps(body)) as response:
                    return await response.text()

            yield ask
    finally:
        await runner.cleanup()


HOSTNAME = "kubernetes.io/hostname"


async def test_the_extender_places_acceptance_pods_on_untested_nodes_only() -> None:
    ib8 = PROFILES.profiles["ib8"]
    w0, w1 = (mutate(o, "ib8", ib8, Target("fabric")).pod for o in objects()[2:4])
    trainer = orjson.loads(orjson.dumps(w0))
    trainer["metadata"] = {
        "name": "trainer",
        "namespace": "fabric",
        "annotations": {keys.APPLIED: w0["metadata"]["annotations"][keys.APPLIED]},
    }
    # kubelet labels every node with its hostname, which the workers' affinity pins them by
    nodes = [
        node(name, hgx("InfiniBand"), labels={HOSTNAME: name, **labels})
        for name, labels in (
            ("a1", {}),
            ("b1", {keys.ACCEPTANCE: keys.ACCEPTANCE_FAILED}),
            ("c1", {keys.ACCEPTANCE: keys.ACCEPTANCE_PASSED}),
        )
    ]
    async with extender([*nodes, w0, w1, trainer]) as ask:
        # kube-scheduler sends each worker only the node its affinity pins it to
        for worker, pinned in ((w0, "a1"), (w1, "b1")):
            answer = orjson.loads(await ask("/filter", {"Pod": worker, "NodeNames": [pinned]}))
            assert (answer["NodeNames"], answer["FailedAndUnresolvableNodes"]) == ([pinned], {})
        names = ["a1", "b1", "c1"]
        answer = orjson.loads(await ask("/filter", {"Pod": trainer, "NodeNames": names}))
        assert answer["NodeNames"] == ["c1"]
        assert answer["FailedAndUnresolvableNodes"] == {
            "a1": "node has not passed fabric acceptance (no kube-rdma.io/acceptance label); "
            "run kube-rdma acceptance run --label on it",
            "b1": "node failed fabric acceptance (kube-rdma.io/acceptance=failed); fix it and "
            "run kube-rdma acceptance run --label on it again",
        }
        table = await ask("/explain?namespace=fabric&name=trainer&format=table")
        assert table.splitlines()[1] == "nodes must have passed fabric acceptance"


def test_render_command_prints_yaml_and_checks_the_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["acceptance", "render", "--profile", "default", "--nodes", "a1:A,b1:B"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["Secret", "Service", "Pod", "Pod", "Pod"]
    assert docs[0]["stringData"]["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert main(["acceptance", "render", "--profile", "nope", "--nodes", "a1,b1"]) == 2
    assert capsys.readouterr().err == (
        "kube-rdma acceptance render: no profile 'nope' (known: default)\n"
    )


@pytest.mark.parametrize(
    ("verb", "nodes", "said"),
    [
        (
            "render",
            "n1",
            "--nodes n1: an acceptance run needs at least two distinct nodes "
            "(NODE[:LEAF],NODE[:LEAF],...): nccl-tests between nodes is what tests the fabric",
        ),
        (
            "render",
            "n1,n1",
            "--nodes n1,n1: names n1 more than once; an acceptance run needs at least two "
            "distinct nodes, each named once",
        ),
        (
            "render",
            "b,a:L1,b:L2,a",
            "--nodes b,a:L1,b:L2,a: names a, b more than once; an acceptance run needs at least "
            "two distinct nodes, each named once",
        ),
        (
            "run",
            "n1",
            "--nodes n1: an acceptance run needs at least two distinct nodes "
            "(NODE[:LEAF],NODE[:LEAF],...): nccl-tests between nodes is what tests the fabric",
        ),
    ],
)
def test_a_plan_that_can_never_run_is_refused(
    verb: str, nodes: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["acceptance", verb, "--profile", "default", "--nodes", nodes]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"kube-rdma acceptance {verb}: {said}\n")
