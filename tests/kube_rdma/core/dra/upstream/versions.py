"""The versions of k8s.io/dynamic-resource-allocation (and k8s.io/apiserver) whose tests are
translated here: Kubernetes 1.34.9 and the release branches after it, with the commit each was
read at (testbed/upstream_dra.py re-reads them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    ref: str
    """Tag or branch of kubernetes/dynamic-resource-allocation."""
    commit: str
    minor: int
    """Kubernetes 1.<minor>."""


VERSIONS = {
    "v0.34.9": Version("v0.34.9", "bf5dd065dee3baa9819013d591805cc78dd7be00", 34),
    "release-1.35": Version("release-1.35", "dfcfbc7537f3bacfe2f6964363960adf31216928", 35),
    "release-1.36": Version("release-1.36", "39826ded32e28f9ee4c6f96578ff4e830bbbceb4", 36),
    "master": Version("master", "3d036712930cdac0b0d46c4c21316a78147c551f", 37),
}
ALLOCATOR_FILE = "structured/internal/allocatortesting/allocator_testing.go"
