"""The RDMA resources a profile adds, and the ones that already count as RDMA."""

from __future__ import annotations

import re
from typing import Self

from pydantic import model_validator

from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS, pattern_error
from webhook.profiles.base import ProfileModel

DEFAULT_RDMA_RESOURCE = "rdma/hca"
_RESOURCE = re.compile(r"^[A-Za-z0-9.-]+/[A-Za-z0-9_.*-]+$")


class Resources(ProfileModel):
    fixed: dict[str, int] | None = None
    """Resources added as-is, e.g. {rdma/hca: 1}. The default when perRail is unset."""
    per_rail: tuple[str, ...] | None = None
    """One resource per rail, in rail order; a container with g GPUs gets the first g."""
    rdma_resources: tuple[str, ...] = DEFAULT_RDMA_PATTERNS
    """Patterns (`*` wildcard) of resources that count as RDMA: a container already asking for
    one of them is left as it is."""

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if self.fixed is not None and self.per_rail is not None:
            raise ValueError("set either fixed or perRail, not both")
        if self.fixed is None and self.per_rail is None:
            object.__setattr__(self, "fixed", {DEFAULT_RDMA_RESOURCE: 1})
        self._check_names()
        if self.per_rail is not None and not self.per_rail:
            raise ValueError("perRail must list at least one resource")
        if self.per_rail and len(set(self.per_rail)) != len(self.per_rail):
            raise ValueError("perRail lists the same resource twice")
        for name, count in (self.fixed or {}).items():
            if count < 1:
                raise ValueError(f"fixed[{name}] must be at least 1, not {count}")
        return self

    def _check_names(self) -> None:
        for name in self.names():
            if not _RESOURCE.match(name):
                raise ValueError(f"{name!r} is not an extended resource name (domain/name)")
            if "*" in name:
                raise ValueError(
                    f"{name!r}: patterns belong in rdmaResources, not fixed or perRail"
                )
        for pattern in self.rdma_resources:
            error = pattern_error(pattern)
            if error:
                raise ValueError(error)

    def names(self) -> tuple[str, ...]:
        return tuple(self.fixed or ()) + tuple(self.per_rail or ())
