"""Which domain a gang's plan keeps other pods out of: the one it fills at the narrowest level
the gang is planned over.

The locality score (extender/scores/locality.py) sends pods of no plan away from the room a
planned gang is filling, so that singletons do not take what the next gang of that shape
needs. Which room that is depends on the gang: a gang that requires the NVLink domain fills
one NVLink domain, one that asks nothing fills a leaf, one that prefers a level outside the
vocabulary fills a domain of that level. When its plan had to go wider than that level (no
domain of it held the gang), the plan fences nothing beyond the nodes it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.cluster.model import Cluster
from extender.gangs.contention import GangLevels
from extender.gangs.plan import Plan
from extender.gangs.reservations import Fence, FenceOf, GangKey
from extender.levels.vocabularies import NVLINK


def plan_fences(
    cluster: Cluster,
    plans: Callable[[], Mapping[GangKey, Plan]],
    levels: Callable[[], GangLevels],
) -> FenceOf:
    """The fence of each plan the planner keeps (`plans`, asked for when a plan is held: the
    planner is built after the book it writes)."""

    def fence_of(gang: GangKey, domain: str) -> Fence | None:
        plan = plans().get(gang)
        if plan is None:
            return None
        requirements = levels()
        vocabulary = requirements.levels()
        search = requirements.search(plan.member, plan.gang, vocabulary)
        if not search.levels:
            return None
        first = search.levels[0]
        labels = vocabulary.nvlink if first == NVLINK else (first,)
        for name in set(plan.slots):
            node = cluster.node(name)
            carried = node.labels if node is not None else {}
            if next((carried[k] for k in labels if carried.get(k)), None) != domain:
                return None
        return labels, domain

    return fence_of
