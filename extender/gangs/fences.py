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

from extender.book.reservations import Fence
from extender.cluster.model import Cluster
from extender.gangs.plan import Plan
from extender.gangs.requirements import GangLevels
from extender.levels.vocabularies import NVLINK


def plan_fence(cluster: Cluster, requirements: GangLevels, plan: Plan) -> Fence | None:
    """The domain the plan fences off, at the narrowest level its gang is planned over; None
    when the plan fills no single domain of that level."""
    vocabulary = requirements.levels()
    search = requirements.search(plan.member, plan.gang, vocabulary)
    if not search.levels:
        return None
    first = search.levels[0]
    labels = vocabulary.nvlink if first == NVLINK else (first,)
    for name in set(plan.slots):
        node = cluster.node(name)
        carried = node.labels if node is not None else {}
        if next((carried[k] for k in labels if carried.get(k)), None) != plan.domain:
            return None
    return labels, plan.domain
