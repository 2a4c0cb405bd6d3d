"""The profile's /dev/shm: a fixed size, or a share of the memory limit within bounds."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, model_validator

from kube_rdma.core.quantity import QuantityError, parse_bytes
from webhook.profiles.base import ProfileModel

_MIB = 1 << 20


def _to_bytes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        shown = "nothing" if value is None else f"a {type(value).__name__}"
        raise ValueError(f"expected a size such as 64Gi or 68719476736, got {shown}")
    try:
        return parse_bytes(value)
    except QuantityError as e:
        raise ValueError(str(e)) from e


Bytes = Annotated[int, BeforeValidator(_to_bytes)]


class Shm(ProfileModel):
    enabled: bool = True
    size: Bytes | None = None
    """A fixed sizeLimit; when unset the size follows the container's memory limit."""
    memory_fraction: float = Field(default=0.5, gt=0, le=1)
    """sizeLimit as a fraction of the container's memory limit (tmpfs pages count against it)."""
    min: Bytes = 1 << 30
    max: Bytes = 256 << 30
    fallback: Bytes = 16 << 30
    """sizeLimit when no selected container sets a memory limit."""

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min > self.max:
            raise ValueError("shm.min is larger than shm.max")
        for name in ("size", "min", "max", "fallback"):
            value = getattr(self, name)
            if value is not None and value < _MIB:
                raise ValueError(f"shm.{name} must be at least 1Mi (a zero sizeLimit means none)")
        return self
