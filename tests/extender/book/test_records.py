"""Gang plan records: the ConfigMap a plan is written as, the records kept in ConfigMaps on the
fake apiserver, and a scheduler that takes over the recorded plans with the members bound."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from extender.book.configmaps import ConfigMapRecords
from extender.book.records import (
    MemoryRecords,
    PlanRecord,
    constraint_spec,
    decode,
    encode,
    record_name,
)
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from extender.scheduling import Scheduler
from extender.weights import Weights
from kube_rdma.core import keys
from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually

RECORD = PlanRecord(("team-a", "llama"), 2, "leaf-b", ("b0", "b1"), "extender-1")
CONFIGMAP: Json = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "gang-team-a-llama-f344170265",
        "namespace": "kube-rdma",
        "labels": {keys.GANG_PLAN: "true"},
    },
    "data": {
        "namespace": "team-a",
        "gang": "llama",
        "size": "2",
        "domain": "leaf-b",
        "slots": '["b0","b1"]',
        "holder": "extender-1",
    },
}


def test_a_record_is_one_configmap() -> None:
    assert encode(RECORD, "kube-rdma") == CONFIGMAP
    assert decode(CONFIGMAP) == RECORD
    assert decode({"data": {"gang": "x"}}) is None


GROUPED = PlanRecord(
    ("team-a", "llama"),
    3,
    "leaf-b",
    ("b0", "b1", "b2"),
    "extender-1",
    slice_size=2,
    groups=({"nodeSelector": {"pool": "a"}}, {}),
    slot_groups=(0, 1, None),
)


def test_a_record_keeps_the_slice_size_and_each_slot_s_group() -> None:
    data = encode(GROUPED, "kube-rdma")["data"]
    assert data == {
        **CONFIGMAP["data"],
        "size": "3",
        "slots": '["b0","b1","b2"]',
        "sliceSize": "2",
        "groups": '[{"nodeSelector":{"pool":"a"}},{}]',
        "slotGroups": "[0,1,null]",
    }
    assert decode({"data": data}) == GROUPED


def test_a_record_of_the_older_format_has_no_slices_and_no_groups() -> None:
    """Written before slices and groups were recorded: read as it always was."""
    record = decode(CONFIGMAP)
    assert record is not None
    assert (record.slice_size, record.groups, record.slot_groups) == (0, (), ())


@pytest.mark.parametrize(
    "change",
    [
        {"sliceSize": "-1"},
        {"sliceSize": "two"},
        {"groups": '{"pool":"a"}'},
        {"groups": "[1]"},
        {"slotGroups": "[0,1]"},
        {"slotGroups": "[0,2,null]"},
        {"slotGroups": '[0,"1",null]'},
        {"slotGroups": "[0,true,null]"},
        {"groups": "[{}, {}"},
    ],
)
def test_a_record_whose_slices_or_groups_do_not_add_up_is_not_read(change: dict[str, str]) -> None:
    data = {**encode(GROUPED, "kube-rdma")["data"], **change}
    assert decode({"data": data}) is None


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"nodeSelector": {}},
        {"nodeSelector": {"pool": "a"}, "tolerations": [{"key": "t", "operator": "Exists"}]},
        {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}},
        {"affinity": {"podAntiAffinity": {}}, "tolerations": []},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "pool", "operator": "In", "values": ["a"]}
                                ]
                            }
                        ]
                    }
                }
            },
            "containers": [{"name": "c"}],
        },
    ],
)
def test_a_group_s_constraints_compile_the_same_from_the_record(spec: Json) -> None:
    pod = {"metadata": {"name": "p"}, "spec": spec}
    kept = constraint_spec(pod)
    assert "containers" not in kept
    assert NodeConstraints.of({"spec": kept}).key == NodeConstraints.of(pod).key


def test_record_names_are_unique_and_short_enough() -> None:
    """The hash is sha256("namespace/name")'s first 10 hex digits: a-b/c and a/b-c differ."""
    assert record_name(("a-b", "c")) == "gang-a-b-c-4e84717d75"
    assert record_name(("a", "b-c")) == "gang-a-b-c-b88f83c840"
    long = record_name(("n" * 63, "g" * 253))
    assert (len(long), long[-11:]) == (253, "-" + sha256_10("n" * 63 + "/" + "g" * 253))


# k8s.io/apimachinery/pkg/util/validation: IsDNS1123Subdomain, which ConfigMap names must pass.
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = re.compile(rf"{DNS1123_LABEL}(\.{DNS1123_LABEL})*")


def valid_object_name(name: str) -> bool:
    return len(name) <= 253 and DNS1123_SUBDOMAIN.fullmatch(name) is not None


GANG_NAMES = [
    "Train_Job",  # a valid annotation value, and the name that once failed every bind
    "train_job",
    "TRAIN-JOB",
    "a..b",
    "a.-b",
    "-leading.and.trailing-",
    "...",
    "x" * 300,
    "Ünïcødé-训练-🚀",
    "İstanbul",  # lowercases to more than one character
    "K",  # KELVIN SIGN: lowercases to an ASCII k
    "with space/and:colon",
]


@pytest.mark.parametrize("gang", GANG_NAMES)
def test_every_gang_name_yields_a_valid_object_name(gang: str) -> None:
    for namespace in ("team-a", "n" * 63):
        name = record_name((namespace, gang))
        assert valid_object_name(name), name
        assert name.endswith("-" + sha256_10(f"{namespace}/{gang}"))
        assert name.startswith("gang-")


def test_a_record_keeps_the_original_gang_name() -> None:
    record = PlanRecord(("team-a", "Train_Job"), 2, "leaf-b", ("b0", "b1"), "extender-1")
    configmap = encode(record, "kube-rdma")
    assert configmap["metadata"]["name"] == "gang-team-a-train-job-" + sha256_10("team-a/Train_Job")
    assert configmap["data"]["gang"] == "Train_Job"
    assert decode(configmap) == record


def test_names_that_read_the_same_never_collide() -> None:
    alike = ["Train_Job", "train_job", "train-job", "TRAIN.JOB", "train.job", "Train Job"]
    names = {record_name(("team-a", gang)) for gang in alike}
    assert len(names) == len(alike)
    assert len({n.rsplit("-", 1)[0] for n in names}) < len(alike)  # only the hash tells them apart


def test_a_valid_gang_name_keeps_the_name_earlier_versions_gave_it() -> None:
    """Records written before an upgrade are found again under the same name."""
    assert record_name(("team-a", "llama")) == CONFIGMAP["metadata"]["name"]
    assert record_name(("team-a", "job.v1")) == "gang-team-a-job.v1-" + sha256_10("team-a/job.v1")


async def test_a_gang_named_train_job_is_recorded_in_the_api(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    records = ConfigMapRecords(core_v1, "kube-rdma", "extender-2")
    async with _running(records):
        record = PlanRecord(("team-a", "Train_Job"), 2, "leaf-b", ("b0", "b1"), "extender-2")
        records.put(record)
        assert await records.flush(record.gang)
        [stored_map] = fake_api.objects("configmaps", "kube-rdma")
        assert valid_object_name(stored_map["metadata"]["name"])
        assert stored_map["data"]["gang"] == "Train_Job"


def sha256_10(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:10]


@pytest.fixture
async def records(fake_api: FakeApiServer, core_v1: Any) -> AsyncIterator[ConfigMapRecords]:
    records = ConfigMapRecords(core_v1, "kube-rdma", "extender-2")
    async with _running(records):
        yield records


class _running:
    def __init__(self, records: ConfigMapRecords) -> None:
        self._records = records

    async def __aenter__(self) -> None:
        self._task = asyncio.create_task(self._records.run())
        await eventually(self._records.ready)

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()


def stored(api: FakeApiServer) -> list[Json]:
    return [o["data"] for o in api.objects("configmaps", "kube-rdma")]


async def test_records_are_written_read_back_and_removed(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    records.put(RECORD)
    assert await records.flush(RECORD.gang)
    assert stored(fake_api) == [{**CONFIGMAP["data"], "holder": "extender-2"}]
    await eventually(lambda: RECORD.gang in records.saved())
    assert records.foreign_changes == 0  # its own write
    records.put(PlanRecord(RECORD.gang, 2, "leaf-a", ("a0", "a1")))  # a new plan
    assert await records.flush(RECORD.gang)
    assert [d["slots"] for d in stored(fake_api)] == ['["a0","a1"]']
    records.remove(RECORD.gang)
    assert await records.flush(RECORD.gang)
    assert stored(fake_api) == []


async def test_another_process_s_records_are_foreign_and_not_removed_under_it(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    records.put(RECORD)
    assert await records.flush(RECORD.gang)
    await eventually(lambda: RECORD.gang in records.saved())
    # Another extender takes the record over (it writes it with its name) ...
    taken = fake_api.get("configmaps", CONFIGMAP["metadata"]["name"], "kube-rdma")
    taken["data"]["holder"] = "extender-3"
    fake_api.update("configmaps", taken, "kube-rdma")
    await eventually(lambda: records.foreign_changes == 1)
    assert records.saved()[RECORD.gang].holder == "extender-3"
    # ... before this one's removal, conditional on the version it wrote, reaches the apiserver.
    records._versions[RECORD.gang] = "101"
    records.remove(RECORD.gang)
    assert await records.flush(RECORD.gang)
    assert [d["holder"] for d in stored(fake_api)] == ["extender-3"]


class Recorded(MemoryRecords):
    """Records as another process left them."""

    def __init__(self, *saved: PlanRecord) -> None:
        super().__init__()
        for record in saved:
            super().put(record)
        self.foreign = len(saved)

    @property
    def foreign_changes(self) -> int:
        return self.foreign


def member(index: int, node: str | None = None) -> Json:
    annotations = {keys.GANG: "llama", keys.GANG_SIZE: "3"}
    return nodes.pod(f"llama-{index}", annotations=annotations, node_name=node)


def cluster(*pods: Json) -> SnapshotSource:
    leaf_a = [nodes.node(f"a{i}", nodes.hgx(), labels={keys.LEAF: "leaf-a"}) for i in range(3)]
    leaf_b = [nodes.node(f"b{i}", nodes.hgx(), labels={keys.LEAF: "leaf-b"}) for i in range(3)]
    return SnapshotSource([*leaf_a, *leaf_b, *pods])


def scheduler(source: SnapshotSource, records: MemoryRecords) -> Scheduler:
    return Scheduler(
        source, Weights, GangSettings(), ("nvidia.com/gpu",), DEFAULT_RDMA_PATTERNS, records
    )


NAMES = ["a0", "a1", "a2", "b0", "b1", "b2"]


async def test_a_gang_half_bound_by_another_process_is_finished_on_its_planned_nodes() -> None:
    recorded = PlanRecord(("team-a", "llama"), 3, "leaf-b", ("b0", "b1", "b2"), "extender-1")
    records = Recorded(recorded)
    source = cluster(member(0, "b1"), member(1), member(2))
    served = scheduler(source, records)
    # The members not bound yet go to the free slots, not to the bound member's node.
    assert served.filter(member(1), NAMES).passed == ["b0"]
    assert served.filter(member(2), NAMES).passed == ["b2"]
    assert served.planner.bound_members == {("team-a", "llama"): {("team-a", "llama-0"): "b1"}}
    # The slots not bound are held: another pod is kept off them.
    assert served.filter(nodes.pod("solo"), NAMES).passed == ["a0", "a1", "a2"]
    assert records.saved()[recorded.gang] == PlanRecord(recorded.gang, 3, "leaf-b", recorded.slots)
    # The two members left arrive at the barrier, which counts the bound one: the gang binds.
    await asyncio.gather(
        served.bind("team-a", "llama-1", "", "b0"), served.bind("team-a", "llama-2", "", "b2")
    )
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in source.cluster.pods()}
    assert bound == {"llama-0": "b1", "llama-1": "b0", "llama-2": "b2"}
    assert served.planner.plans == {}
    assert records.saved() == {}  # bound whole: the record is removed


async def test_nothing_is_adopted_before_another_process_wrote() -> None:
    records = Recorded(PlanRecord(("team-a", "llama"), 3, "leaf-b", ("b0", "b1", "b2")))
    records.foreign = 0  # as this process's own records
    served = scheduler(cluster(member(0), member(1), member(2)), records)
    served.sweep()
    assert served.planner.plans == {}
    records.foreign = 1
    served.sweep()  # a standby never called does not sweep what another process wrote
    assert served.planner.plans == {}
    assert len(records.saved()) == 1


async def test_a_record_of_a_gang_without_pods_is_removed() -> None:
    records = Recorded(PlanRecord(("team-a", "gone"), 2, "leaf-b", ("b0", "b1"), "extender-1"))
    served = scheduler(cluster(member(0)), records)
    served.filter(member(0), NAMES)
    assert ("team-a", "gone") not in records.saved()
