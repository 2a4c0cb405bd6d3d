"""A whole simulation: every variant over the same cluster and jobs, into one JSON document
(its schema is in docs/simulate.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.scheduler import Job
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Progress, Settings, Variant, simulate

SCHEMA_VERSION = 2
VariantProgress = Callable[[Variant, float], None]


def run_variants(
    cluster: SimCluster,
    jobs: list[Job],
    source: str,
    variants: list[Variant],
    settings: Settings,
    progress: VariantProgress | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """`warnings`: what is off in the workload for this cluster (workload.network_warnings)."""
    results = []
    for variant in variants:
        told = _told(progress, variant)
        results.append(measure(simulate(cluster, jobs, variant, settings, told), jobs, cluster))
    return {
        "version": SCHEMA_VERSION,
        "cluster": {
            "file": str(cluster.path),
            "nodes": len(cluster.nodes),
            "gpus": cluster.gpus(),
            "gpus_free": cluster.shape().gpus,
        },
        "workload": {
            "source": source,
            "jobs": len(jobs),
            "pods": sum(j.members for j in jobs),
            "gangs": sum(j.gang for j in jobs),
        },
        "warnings": list(warnings or []),
        "variants": results,
    }


def _told(progress: VariantProgress | None, variant: Variant) -> Progress | None:
    if progress is None:
        return None

    def tell(done: float) -> None:
        progress(variant, done)

    return tell
