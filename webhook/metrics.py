"""The webhook's Prometheus metrics, on a registry the app owns (no module-level state)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Finer than the apiserver's own webhook buckets (5 ms first), since a review takes ~1 ms.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.reviews = Counter(
            "kube_rdma_webhook_reviews",
            "Admission reviews answered, by outcome and profile.",
            ["outcome", "profile"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kube_rdma_webhook_review_duration_seconds",
            "Time to answer an admission review, by outcome and profile.",
            ["outcome", "profile"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.bad_requests = Counter(
            "kube_rdma_webhook_bad_requests",
            "HTTP requests to /mutate rejected before review, by HTTP status.",
            ["code"],
            registry=self.registry,
        )
        self.profile_reloads = Counter(
            "kube_rdma_profile_reloads",
            "Profile file reloads, by result (loaded or rejected).",
            ["result"],
            registry=self.registry,
        )
        self.profile_warnings = Gauge(
            "kube_rdma_profile_warnings",
            "Load-time warnings of the profiles in force, by profile (the log says what they are).",
            ["profile"],
            registry=self.registry,
        )

    def set_profile_warnings(self, warnings: Mapping[str, tuple[str, ...]]) -> None:
        self.profile_warnings.clear()
        for name, messages in warnings.items():
            self.profile_warnings.labels(name).set(len(messages))
