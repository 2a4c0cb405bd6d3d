"""How many placed gangs lie inside one domain of each network level, and inside one NVLink
domain: the levels read from the cluster's labels as the extender's `--topology auto` reads
them (extender/levels/vocabularies.py), so a cluster in any vocabulary is reported in its own
terms. A gang counts at a level when every node it got carries the level and all share one
value."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from extender.levels.vocabularies import NVLINK, auto_levels
from kube_rdma.core.objects import Json


def gangs_in_one_domain(gangs: Iterable[tuple[str, ...]], nodes: Iterable[Json]) -> dict[str, int]:
    """Level (`nvlink` first, then the fabric narrowest first) -> gangs inside one domain of it,
    for the levels some node carries."""
    labels_of = {str(n["metadata"]["name"]): (n["metadata"].get("labels") or {}) for n in nodes}
    levels = auto_levels(labels_of.values())
    used = levels.in_use(labels_of.values())
    counts = dict.fromkeys(used, 0)
    for placed in gangs:
        labels = [labels_of.get(node, {}) for node in placed]
        for level in used:
            counts[level] += _one_domain(labels, level, levels.nvlink_domain)
    return counts


def _one_domain(
    labels: list[Mapping[str, str]],
    level: str,
    nvlink_of: Callable[[Mapping[str, str]], str | None],
) -> bool:
    if level == NVLINK:
        values = {nvlink_of(ls) for ls in labels}
    else:
        values = {ls.get(level) for ls in labels}
    return len(values) == 1 and None not in values
