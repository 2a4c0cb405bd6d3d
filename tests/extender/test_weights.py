"""The weights file: defaults, validation messages, and the running extender reloading it."""

from __future__ import annotations

import pytest

from extender.weights import DEFAULT, Weights, parse_weights
from kube_rdma.core.config_file import ConfigError


def test_defaults() -> None:
    assert DEFAULT.as_dict() == {"affinity": 3.0, "rate": 1.0, "binpack": 2.0, "locality": 1.0}
    assert parse_weights("", "w.yaml") == DEFAULT
    assert parse_weights("weights: {binpack: 0}", "w.yaml") == Weights(binpack=0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "weights: {affinity: -1}",
            "w.yaml: weights.affinity: Input should be greater than or equal to 0",
        ),
        ("weights: {afinity: 1}", "w.yaml: weights.afinity: Extra inputs are not permitted"),
        (
            "weights: {affinity: 0, rate: 0, binpack: 0, locality: 0}",
            "w.yaml: weights: at least one weight must be above 0",
        ),
        (
            "weights: [1, 2]",
            "w.yaml: weights: Input should be a valid dictionary or instance of Weights",
        ),
        (
            "weights: {affinity: lots}",
            "w.yaml: weights.affinity: Input should be a valid number, unable to parse string as "
            "a number",
        ),
    ],
)
def test_invalid_weights_are_explained(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_weights(text, "w.yaml")
    assert str(error.value) == message
