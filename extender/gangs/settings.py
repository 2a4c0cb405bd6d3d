"""What the gang planner is configured with, and what it records of each plan it makes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from extender.gangs.identity import Gang
from extender.levels.vocabularies import CLIQUE, PRESETS
from kube_rdma.core import keys


@dataclass(frozen=True)
class GangSettings:
    domains: tuple[str, ...] = (
        keys.LEAF,
        keys.SPINE,
        "topology.kubernetes.io/zone",
    )
    """Node labels of network domains, narrowest first."""
    nvlink: tuple[str, ...] = (CLIQUE,)
    """Node labels that name a node's NVLink domain, the first a node carries counting."""
    topology: str = "kube-rdma"
    """Where `domains` and `nvlink` came from (a `--topology` preset, `--domain-label`), or
    `auto`: read from the labels the nodes carry, each time a gang is planned."""
    plan_timeout: float = 120.0
    """Seconds without progress (a member filtered or reaching bind) before a plan expires."""
    barrier_timeout: float = 4.0
    """Seconds a member's bind request waits for the others; below kube-scheduler's
    httpTimeout. The member stays arrived after its request fails."""
    barrier_progress_timeout: float = 30.0
    """Seconds a gang waits at the barrier for its next member to arrive before it is given up
    (nothing bound, the plan dropped): the barrier's window grows with the gang as long as
    members keep coming."""
    absent_limit: int = 3
    """Calls in a row without a planned node among sampled candidates before the plan is
    redone."""
    native_gang_scheduling: str = "auto"
    """`auto`, `on` or `off`: whether kube-scheduler's own GangScheduling holds the members of a
    scheduling.k8s.io group at Permit (docs/gangs.md, "Kubernetes' own gangs"). Held gangs bind
    without the extender's barrier and are not made to wait for their members a second time.
    `auto` and `on` trust it for every group read off a served API; `off` keeps the barrier."""
    percentage_of_nodes_to_score: int = 100
    """kube-scheduler's percentageOfNodesToScore (0: its adaptive default), which tells a
    candidate list cut short by sampling from one that holds every feasible node."""


@dataclass(frozen=True)
class Decision:
    """One plan made: for whom, in which domain, and the most members any single domain of
    the narrowest level could have taken at that moment."""

    gang: Gang
    needed: int
    domain: str
    narrowest_fit: int


def level_settings(
    gangs: GangSettings, topology: str | None, domain_labels: Sequence[str] | None
) -> GangSettings:
    """The settings with the levels of a `--topology` preset (`auto`: read from the nodes),
    whose switch levels `--domain-label` replaces when given."""
    if domain_labels:
        preset = PRESETS.get(topology or "kube-rdma", PRESETS["kube-rdma"])
        source = f"{topology} with --domain-label" if topology else "--domain-label"
        return replace(gangs, domains=tuple(domain_labels), nvlink=preset.nvlink, topology=source)
    if topology == "auto":
        return replace(gangs, topology="auto")
    preset = PRESETS[topology or "kube-rdma"]
    return replace(gangs, domains=preset.fabric, nvlink=preset.nvlink, topology=preset.source)
