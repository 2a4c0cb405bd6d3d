from __future__ import annotations

from decimal import Decimal

import pytest

from kube_rdma.core.quantity import QuantityError, format_bytes, parse_bytes, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        (8, Decimal(8)),
        ("16Gi", Decimal(16 << 30)),
        ("1.5Gi", Decimal(3 << 29)),
        ("500M", Decimal(500_000_000)),
        ("250m", Decimal("0.25")),
        ("1e3", Decimal(1000)),
        ("2E6", Decimal(2_000_000)),
        ("1Ti", Decimal(1 << 40)),
    ],
)
def test_parse_quantity(text: str | int, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "16GB", "1..5", "x", "1 Gi"])
def test_bad_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
        parse_quantity(text)


def test_bytes_round_up_and_format() -> None:
    assert parse_bytes("1.5") == 2
    assert parse_bytes("100m") == 1
    assert [format_bytes(n) for n in (16 << 30, 1536 << 20, 1000, 0)] == [
        "16Gi",
        "1536Mi",
        "1000",
        "0",
    ]
    with pytest.raises(QuantityError, match="is negative"):
        parse_bytes("-1Gi")


@pytest.mark.parametrize("text", ["1e999999", "1e999999999", "1E31", "1" * 41, "1e-31"])
def test_huge_quantities_are_refused_before_any_arithmetic(text: str) -> None:
    with pytest.raises(QuantityError, match="is out of range for a Kubernetes quantity"):
        parse_quantity(text)
