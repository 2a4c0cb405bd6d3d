"""The emulation's preemption decisions, rule by rule, against kube-scheduler's code: each test
names the upstream function it checks (kubernetes pkg/scheduler/framework/plugins/
defaultpreemption/default_preemption.go and pkg/scheduler/framework/preemption/preemption.go,
1.30 to 1.34)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kube_rdma.core.objects import Json
from kubesim.scheduler.disruption import disruptions_allowed, split_by_violation
from kubesim.scheduler.preemption import (
    Victims,
    candidate_count,
    dry_run,
    not_eligible,
    pick_node,
    select_victims,
)

TERMINATING = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
BY_SCHEDULER = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def pod(
    name: str,
    priority: int = 0,
    gpus: int = 0,
    started: int | None = None,
    labels: dict[str, str] | None = None,
    **extra: Json,
) -> Json:
    status: Json = {"startTime": f"2026-01-01T00:00:{started:02d}Z"} if started is not None else {}
    status |= extra.get("status", {})
    return {
        "metadata": {"name": name, "namespace": "team-a", "labels": labels or {}}
        | extra.get("metadata", {}),
        "spec": {"priority": priority, "gpus": gpus} | extra.get("spec", {}),
        "status": status,
    }


def fits_in(capacity: int, on_node: Sequence[Json], wanted: int):  # type: ignore[no-untyped-def]
    """A node of `capacity` GPUs holding `on_node`: does `wanted` fit with `removed` gone?"""

    def fits(removed: Sequence[Json]) -> str | None:
        gone = {id(p) for p in removed}
        used = sum(p["spec"]["gpus"] for p in on_node if id(p) not in gone)
        return None if capacity - used >= wanted else "Insufficient nvidia.com/gpu"

    return fits


def names(found: Victims | str) -> tuple[list[str], int] | str:
    if isinstance(found, str):
        return found
    return [p["metadata"]["name"] for p in found.pods], found.pdb_violations


def pdb(name: str, allowed: int, labels: dict[str, str], **status: Json) -> Json:
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed} | status,
    }


# Eligibility: DefaultPreemption.PodEligibleToPreemptOthers


def test_a_pod_with_preemption_policy_never_never_preempts() -> None:
    """default_preemption.go PodEligibleToPreemptOthers: preemptionPolicy Never."""
    never = pod("p", 100, spec={"preemptionPolicy": "Never"})
    assert not_eligible(never, False, []) == "not eligible due to preemptionPolicy=Never."


@pytest.mark.parametrize(
    ("on_nominated", "unresolvable", "expected"),
    [
        # a lower-priority victim still terminating by preemption: wait for it
        (
            [pod("v", 0, metadata=TERMINATING, status={"conditions": [BY_SCHEDULER]})],
            False,
            "not eligible due to a terminating pod on the nominated node.",
        ),
        # ... unless this cycle found the nominated node unresolvable
        ([pod("v", 0, metadata=TERMINATING, status={"conditions": [BY_SCHEDULER]})], True, None),
        # terminating for another reason (no DisruptionTarget by the scheduler)
        ([pod("v", 0, metadata=TERMINATING)], False, None),
        # the condition, but not being deleted
        ([pod("v", 0, status={"conditions": [BY_SCHEDULER]})], False, None),
        # terminating by preemption, but not of lower priority
        ([pod("v", 100, metadata=TERMINATING, status={"conditions": [BY_SCHEDULER]})], False, None),
    ],
)
def test_a_nominated_pod_waits_for_its_terminating_victims(
    on_nominated: list[Json], unresolvable: bool, expected: str | None
) -> None:
    """default_preemption.go PodEligibleToPreemptOthers and podTerminatingByPreemption."""
    nominated = pod("p", 100, status={"nominatedNodeName": "n1"})
    assert not_eligible(nominated, unresolvable, on_nominated) == expected


# Victims on one node: DefaultPreemption.SelectVictimsOnNode


def test_victims_are_the_least_important_pods_the_preemptor_cannot_do_without() -> None:
    """default_preemption.go SelectVictimsOnNode: every lower-priority pod removed, then
    reprieved most important first (util.MoreImportantPod: priority, then the earlier start)."""
    on_node = [
        pod("high", 10, gpus=4, started=1),
        pod("old", 5, gpus=2, started=2),
        pod("young", 5, gpus=2, started=3),
        pod("peer", 100, gpus=0),
    ]
    preemptor = pod("p", 100, gpus=2)
    found = select_victims(preemptor, on_node, fits_in(8, on_node, 2), [])
    assert names(found) == (["young"], 0)


def test_budget_violating_pods_are_reprieved_first() -> None:
    """default_preemption.go SelectVictimsOnNode and filterPodsWithPDBViolation: the victims
    whose loss breaks a budget are tried for reprieve before the others."""
    on_node = [
        pod("older", 5, gpus=4, started=1),
        pod("guarded", 5, gpus=4, started=2, labels={"app": "db"}),
    ]
    preemptor = pod("p", 100, gpus=4)
    budgets = [pdb("db", 0, {"app": "db"})]
    assert names(select_victims(preemptor, on_node, fits_in(8, on_node, 4), budgets)) == (
        ["older"],
        0,
    )
    assert names(select_victims(preemptor, on_node, fits_in(8, on_node, 8), budgets)) == (
        ["older", "guarded"],
        1,
    )


@pytest.mark.parametrize(
    ("on_node", "wanted", "expected"),
    [
        ([pod("peer", 100, gpus=8)], 1, "No preemption victims found for incoming pod"),
        ([pod("low", 0, gpus=4), pod("peer", 100, gpus=4)], 8, "Insufficient nvidia.com/gpu"),
    ],
)
def test_a_node_is_no_candidate(on_node: list[Json], wanted: int, expected: str) -> None:
    """default_preemption.go SelectVictimsOnNode: no lower-priority pod
    (UnschedulableAndUnresolvable), or no fit even with all of them gone (the filters' status)."""
    found = select_victims(pod("p", 100, gpus=wanted), on_node, fits_in(8, on_node, wanted), [])
    assert found == expected


def test_budgets_are_spent_in_order_and_skip_pods_already_disrupted() -> None:
    """default_preemption.go filterPodsWithPDBViolation: disruptionsAllowed is spent by each
    selected pod in order; a pod in status.disruptedPods spends nothing; a budget of another
    namespace or with an empty selector selects nothing."""
    pods = [pod(n, labels={"app": "x"}) for n in ("a", "b", "c", "d")]
    budgets = [
        pdb("x", 1, {"app": "x"}, disruptedPods={"a": "2026-01-01T00:00:00Z"}),
        pdb("other", 0, {"app": "x"}) | {"metadata": {"name": "o", "namespace": "team-b"}},
        pdb("empty", 0, {}),
    ]
    violating, others = split_by_violation(pods, budgets)
    assert [p["metadata"]["name"] for p in violating] == ["c", "d"]
    assert [p["metadata"]["name"] for p in others] == ["a", "b"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": 2}, 0),
        ({"minAvailable": 1}, 1),
        ({"minAvailable": "30%"}, 1),  # 30 % of 3, rounded up: 1
        ({"maxUnavailable": 1}, 0),  # 3 expected, 2 desired, 2 healthy
        ({"maxUnavailable": "100%"}, 2),
        ({}, 0),
    ],
)
def test_the_disruption_controllers_arithmetic(spec: Json, expected: int) -> None:
    """pkg/controller/disruption/disruption.go getExpectedPodCount and updatePdbStatus, for pods
    no scale controller counts: expected = selected pods, healthy = those running."""
    pods = [
        pod("a", labels={"app": "x"}, spec={"nodeName": "n1"}),
        pod("b", labels={"app": "x"}, spec={"nodeName": "n2"}),
        pod("c", labels={"app": "x"}),
    ]
    budget = {
        "metadata": {"namespace": "team-a"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}} | spec,
    }
    assert disruptions_allowed(budget, pods) == expected


# Candidates and the pick: preemption.go


@pytest.mark.parametrize(("potential", "expected"), [(5, 5), (150, 100), (2000, 200)])
def test_how_many_candidates_are_dry_run(potential: int, expected: int) -> None:
    """default_preemption.go calculateNumCandidates with DefaultPreemptionArgs' defaults
    (minCandidateNodesPercentage 10, minCandidateNodesAbsolute 100)."""
    assert candidate_count(potential) == expected


def test_the_dry_run_stops_only_once_a_candidate_breaks_no_budget() -> None:
    """preemption.go DryRunPreemption: candidates breaking no budget first; the search ends
    when enough are found and one of them breaks none; a node where the preemptor fits with no
    victim is an error."""
    violating = Victims((pod("v", 0),), 1)
    clean = Victims((pod("c", 0),), 0)
    answers: dict[str, Victims | str] = {
        "n1": violating,
        "n2": "Insufficient nvidia.com/gpu",
        "n3": Victims((), 0),
    }
    answers |= {f"m{i}": clean for i in range(150)}
    found, failures, errors = dry_run(list(answers), lambda node: answers[node])
    assert (list(found)[:2], list(found)[-1], len(found)) == (["m0", "m1"], "n1", 100)
    assert failures == {
        "n2": "Insufficient nvidia.com/gpu",
        "n3": 'expected at least one victim pod on node "n3"',
    }
    assert errors == ['expected at least one victim pod on node "n3"']


def at(priority: int, started: int | None = None) -> Json:
    return pod("x", priority, started=started)


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        # 1. fewest PDB violations
        ({"a": Victims((at(0),), 2), "b": Victims((at(50),), 1)}, "b"),
        # 2. the lowest highest-priority victim, read from the first victim as given
        ({"a": Victims((at(5), at(1)), 0), "b": Victims((at(3), at(9)), 0)}, "b"),
        # 3. the smallest sum of priorities
        ({"a": Victims((at(5), at(4)), 0), "b": Victims((at(5), at(1)), 0)}, "b"),
        # 3 again: a priority counts as MaxInt32 + 1 + priority, so that more pods of a
        # negative priority do not add up to less
        ({"a": Victims((at(-5), at(-5)), 0), "b": Victims((at(-5),), 0)}, "b"),
        # 5. the latest start among the highest-priority victims
        ({"a": Victims((at(5, 3), at(1, 1)), 0), "b": Victims((at(5, 7), at(1, 9)), 0)}, "b"),
        # then the first (here: the smallest name)
        ({"b": Victims((at(5, 3),), 0), "a": Victims((at(5, 3),), 0)}, "a"),
    ],
)
def test_the_pick_among_candidates(candidates: dict[str, Victims], expected: str) -> None:
    """preemption.go pickOneNodeForPreemption, its criteria in order, and
    util.GetEarliestPodStartTime."""
    assert pick_node(candidates) == expected
