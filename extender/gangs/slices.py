"""A sliced gang's nodes: consecutive ranks in slices of a given size, each slice inside one
domain of its level, so that ranks that talk most share the narrowest network (Kueue's
`podset-slice-required-topology` with `podset-slice-size`, kube-rdma's own equivalent).

A CompositePodGroup's gang is sliced by its PodGroups, each a slice of its own size
(extender/gangs/native.py): `cut` gives the slices' sizes either way, and `span` the slots of a
rank's slice.

Each slice goes, in rank order, to the tightest domain that still holds it (fewest member
slots left, then the best mean score), on its best-scoring nodes, each filled before the next:
the rule the whole gang's domain is chosen by, so no domain is fragmented for the next gang.
Pure: extender/gangs/choose.py calls it for each candidate domain of the whole gang.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class Candidate(Protocol):
    @property
    def count(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def labels(self) -> Mapping[str, str]: ...


def cut(needed: int, size: int, sizes: Sequence[int] = ()) -> list[int]:
    """The slices' sizes for `needed` members: `sizes` where given, else `size` at a time, a
    last slice short when `needed` is not a multiple of it."""
    if sizes:
        return list(sizes)
    return [min(size, needed - start) for start in range(0, needed, size)] if size else []


def span(rank: int, size: int, sizes: Sequence[int] = ()) -> tuple[int, int] | None:
    """The first slot and the number of slots of the slice holding `rank`."""
    if not sizes:
        return (rank // size * size, size) if size else None
    first = 0
    for count in sizes:
        if rank < first + count:
            return first, count
        first += count
    return None


def slice_fill(
    names: Sequence[str], fits: Mapping[str, Candidate], level: str, sizes: Sequence[int]
) -> list[str] | None:
    """One node per member, slice 0's members first; None when some slice fits in no domain."""
    left = {n: fits[n].count for n in names}
    by_domain: dict[str, list[str]] = {}
    for name in names:
        value = fits[name].labels.get(level)
        if value is not None:
            by_domain.setdefault(value, []).append(name)
    nodes: list[str] = []
    for want in sizes:
        viable = [
            (room, -mean_score(fits, members), value)
            for value, members in by_domain.items()
            if (room := sum(left[n] for n in members)) >= want
        ]
        if not viable:
            return None
        _, _, value = min(viable)
        nodes += _take(by_domain[value], fits, left, want)
    return nodes


def _take(
    members: list[str], fits: Mapping[str, Candidate], left: dict[str, int], want: int
) -> list[str]:
    taken: list[str] = []
    for name in sorted(members, key=lambda n: (-fits[n].score, -fits[n].count, n)):
        take = min(left[name], want - len(taken))
        left[name] -= take
        taken += [name] * take
        if len(taken) == want:
            break
    return taken


def mean_score(fits: Mapping[str, Candidate], names: Sequence[str]) -> float:
    return sum(fits[n].score for n in names) / len(names) if names else 0.0
