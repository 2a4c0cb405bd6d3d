"""What a job asks of the network levels: a level it must be placed inside (required), one it
should be (preferred), and slices of consecutive ranks each inside one domain of a level.

Read, first match wins:
1. kube-rdma's own annotations on the pod (a controller copies them from its template):
   `kube-rdma.io/topology-required`, `-preferred`, `-slice-required`, `-slice-size`.
2. KAI scheduler's annotations on the workload's top owner (kube_rdma/core/frameworks/kai.py):
   its required and preferred placements.
3. Kueue's pod template annotations (kube_rdma/core/frameworks/kueue.py): its podset's
   required and preferred topology, and slices of a required topology with their size, only
   when Kueue did not place the pods itself: pods Kueue's TAS admitted carry its TAS label and
   the node selectors of Kueue's assignment, which the planner honours as any node selector;
   planning them against Kueue's annotations again could only contradict that assignment.

A level's value is a node label, or `nvlink` for the NVLink domain; a label that names NVLink
domains in the cluster's vocabulary (`nvidia.com/gpu.clique`) means the NVLink level too.

A pod with a ComputeDomain claim (extender/levels/compute_domains.py) needs multi-node NVLink,
whatever its annotations say: each slice inside one NVLink domain when slices are asked, else
the whole gang. The level its annotations gave instead is set aside, and explain says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from extender.levels.search import Search
from extender.levels.vocabularies import NVLINK, Levels
from kube_rdma.core import keys
from kube_rdma.core.frameworks import kai, kueue
from kube_rdma.core.objects import Json

_OURS = (
    keys.TOPOLOGY_REQUIRED,
    keys.TOPOLOGY_PREFERRED,
    keys.TOPOLOGY_SLICE_REQUIRED,
    keys.TOPOLOGY_SLICE_SIZE,
)
_KUEUE = (
    kueue.PODSET_REQUIRED_TOPOLOGY,
    kueue.PODSET_PREFERRED_TOPOLOGY,
    kueue.PODSET_SLICE_REQUIRED_TOPOLOGY,
    kueue.PODSET_SLICE_SIZE,
)


@dataclass(frozen=True)
class Placement:
    required: str | None = None
    preferred: str | None = None
    slice_level: str | None = None
    slice_size: int = 0
    source: str = "none"
    """Whose annotations asked: `kube-rdma.io`, KAI's API group (`kai.GROUP`), `kueue`,
    `kueue-placed`."""
    problem: str | None = None
    """An annotation value that cannot be read: the gang is not planned, and this says why."""
    nvlink_claim: str | None = None
    """`<namespace>/<name>` of the ComputeDomain claim that makes the gang need the NVLink
    domain."""
    set_aside: str | None = None
    """What the annotations asked that the ComputeDomain claim replaced."""
    slice_sizes: tuple[int, ...] = ()
    """Each slice's members where they differ (a CompositePodGroup's PodGroups)."""

    def needing_nvlink(self, claim: str, levels: Levels) -> Placement:
        """This placement for a gang whose ComputeDomain `claim` needs multi-node NVLink: each
        slice inside one NVLink domain when it is sliced, else the whole gang."""
        if self.problem is not None:
            return self
        if self.slice_level is not None:
            said = _level(self.slice_level, levels)
            aside = None if said == NVLINK else f"slices in {self.slice_level}"
            return replace(self, slice_level=NVLINK, nvlink_claim=claim, set_aside=aside)
        said = _level(self.required, levels)
        aside = None if said in (None, NVLINK) else f"required {self.required}"
        return replace(self, required=NVLINK, nvlink_claim=claim, set_aside=aside)

    def needs_nvlink(self, levels: Levels) -> bool:
        """The gang, or each of its slices, must be inside one NVLink domain."""
        return NVLINK in (_level(self.required, levels), _level(self.slice_level, levels))

    def search(self, levels: Levels) -> Search:
        """The levels the gang is planned over, narrowest first."""
        required = _level(self.required, levels)
        preferred = _level(self.preferred, levels)
        chain = _chain(required, levels) if required else _preferred_chain(preferred, levels)
        if required and preferred and preferred not in chain:
            # Tried first, a domain of the preferred level holding the whole gang is taken
            # as it is: never when that level is a switch tier wider than the required one
            # (any tier, for the NVLink level), which it need not nest in.
            wider = preferred in levels.fabric and (required == NVLINK or required in levels.fabric)
            chain = chain if wider else (preferred, *chain)
        sliced = _level(self.slice_level, levels)
        return Search(chain, required is None, sliced, self.slice_size, self.slice_sizes)

    def describe(self) -> str:
        parts = [f"required {self.required}" if self.required else ""]
        parts.append(f"preferred {self.preferred}" if self.preferred else "")
        if self.slice_level:
            size = "+".join(map(str, self.slice_sizes)) if self.slice_sizes else self.slice_size
            parts.append(f"slices of {size} in one {self.slice_level}")
        said = ", ".join(p for p in parts if p) or "no level asked"
        if self.nvlink_claim is None:
            return f"{said} ({self.source})"
        whose = [] if self.source == "none" else [self.source]
        whose.append(f"ComputeDomain claim {self.nvlink_claim}")
        aside = f"; {self.set_aside} set aside" if self.set_aside else ""
        return f"{said} ({', '.join(whose)}{aside})"


def placement_of(pod: Json, top_owner: Json | None = None) -> Placement:
    annotations = _annotations(pod)
    if any(k in annotations for k in _OURS):
        return _read(annotations, _OURS, "kube-rdma.io")
    owner = _annotations(top_owner or {})
    required, preferred = kai.TOPOLOGY_REQUIRED_PLACEMENT, kai.TOPOLOGY_PREFERRED_PLACEMENT
    if required in owner or preferred in owner:
        return Placement(owner.get(required), owner.get(preferred), source=kai.GROUP)
    if kueue_placed(pod):
        return Placement(source="kueue-placed")
    if any(k in annotations for k in _KUEUE):
        return _read(annotations, _KUEUE, "kueue")
    return Placement()


def kueue_placed(pod: Json) -> bool:
    """Kueue's TAS admitted the pod and gave it its domain (the label its webhook adds)."""
    return kueue.placed((pod.get("metadata") or {}).get("labels") or {})


def _read(annotations: Mapping[str, str], names: tuple[str, ...], source: str) -> Placement:
    required, preferred, slice_level, size_text = (annotations.get(k) for k in names)
    size = 0
    if slice_level is not None or size_text is not None:
        if slice_level is None or size_text is None:
            missing = names[2] if slice_level is None else names[3]
            return Placement(source=source, problem=f"{missing} is missing: set both or neither")
        if not size_text.isdigit() or int(size_text) < 1:
            problem = f"{names[3]} must be a whole number of pods, not {size_text!r}"
            return Placement(source=source, problem=problem)
        size = int(size_text)
    return Placement(required, preferred, slice_level, size, source)


def _annotations(obj: Json) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _level(value: str | None, levels: Levels) -> str | None:
    if value is None:
        return None
    return NVLINK if value == NVLINK or value in levels.nvlink else value


def _chain(required: str, levels: Levels) -> tuple[str, ...]:
    """Every level up to the required one, narrowest first; a label the vocabulary does not
    know is a level of its own."""
    if required in levels.fabric:
        return levels.fabric[: levels.fabric.index(required) + 1]
    return (required,)


def _preferred_chain(preferred: str | None, levels: Levels) -> tuple[str, ...]:
    if preferred is None or preferred in levels.fabric:
        return levels.fabric
    return (preferred, *levels.fabric)
