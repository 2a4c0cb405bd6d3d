"""Where a gang may go: the network levels its placement tries, narrowest first, whether the
whole cluster may take it, and the slices it is cut into. What a job asks of the levels
(extender/levels/placement.py) becomes a search; the gang choice (extender/gangs/choose.py)
walks it."""

from __future__ import annotations

from dataclasses import dataclass

CLUSTER = "cluster"
"""The widest domain: every node, whatever its labels."""


@dataclass(frozen=True)
class Search:
    """Where a gang may go: the levels tried, narrowest first, and whether the whole cluster
    may take it when no domain of them does."""

    levels: tuple[str, ...]
    cluster: bool = True
    slice_level: str | None = None
    slice_size: int = 0
    """Members per slice; 0: the gang is not sliced."""
    slice_sizes: tuple[int, ...] = ()
    """Each slice's members, in rank order, where they differ (a CompositePodGroup's
    PodGroups); overrides `slice_size`."""

    @property
    def sliced(self) -> bool:
        return self.slice_level is not None and (self.slice_size > 0 or bool(self.slice_sizes))
