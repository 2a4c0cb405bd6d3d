"""Kubernetes resource quantities (`16Gi`, `500M`, `1.5e9`, `250m`) as numbers.

Both services compare and size resources: the webhook sizes /dev/shm from a memory limit, the
extender counts GPUs and RDMA units. The grammar follows apimachinery's `resource.Quantity`.
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_MAX_DIGITS = 40
_MAX_EXPONENT = 30
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@functools.lru_cache(maxsize=4096, typed=True)
def parse_quantity(value: str | int | float) -> Decimal:
    """The exact value of a quantity; raises QuantityError naming the bad input. Remembered:
    a cluster spells its quantities a few hundred ways, each parsed once per pod otherwise."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if not match:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (expected e.g. 16Gi, 512Mi, 1G or 8)"
        )
    number, suffix = match.group(1), match.group(2) or ""
    exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") else 0
    # Bounded before any arithmetic: converting 1e999999 to an int takes the CPU for seconds.
    if len(number) > _MAX_DIGITS or abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(f"{value!r} is out of range for a Kubernetes quantity")
    try:
        base = Decimal(number)
    except InvalidOperation as e:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from e
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    return base * Decimal(10) ** exponent


def parse_bytes(value: str | int | float) -> int:
    """A memory quantity in whole bytes (rounded up, as the apiserver does)."""
    exact = parse_quantity(value)
    whole = int(exact.to_integral_value(rounding="ROUND_CEILING"))
    if whole < 0:
        raise QuantityError(f"{value!r} is negative")
    return whole


def format_bytes(size: int) -> str:
    """The shortest exact binary-suffixed form of `size` bytes (`16Gi`, `1536Mi`, `1000`)."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if size and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)
