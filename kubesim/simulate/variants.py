"""The variants a simulation compares: plain kube-scheduler, the extender with each weights file
(or its default weights when none is given), and the extender with each value of a sweep.

A sweep (`--sweep CRITERION=v1,v2,...`) varies one criterion of the last weights file given (or
of the default weights) and keeps the others.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from extender.weights import CRITERIA, DEFAULT, Weights, parse_weights
from kube_rdma.core.config_file import ConfigError, read_text
from kubesim.simulate.run import Variant

PLAIN = "kube-scheduler"


def build_variants(weights_files: list[Path], sweep: str | None) -> list[Variant]:
    """Raises ConfigError naming the file or the option, the entry and the problem."""
    variants = [Variant(PLAIN, None)]
    base = DEFAULT
    for path in weights_files:
        base = parse_weights(read_text(path), str(path))
        variants.append(Variant(path.stem, base))
    if sweep is not None:
        variants += swept(base, sweep)
    elif not weights_files:
        variants.append(Variant("extender", DEFAULT))
    return variants


def swept(base: Weights, sweep: str) -> list[Variant]:
    criterion, sep, values = sweep.partition("=")
    if not sep or not values:
        raise ConfigError(f"--sweep {sweep}: expected CRITERION=v1,v2,...")
    if criterion not in CRITERIA:
        known = ", ".join(CRITERIA)
        raise ConfigError(f"--sweep {sweep}: unknown criterion {criterion!r}; one of {known}")
    variants = []
    for text in values.split(","):
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"--sweep {sweep}: {text!r} is not a number") from None
        try:
            weights = Weights(**{**base.as_dict(), criterion: value})
        except ValidationError as e:
            problem = e.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(f"--sweep {sweep}: {criterion}={text}: {problem}") from None
        variants.append(Variant(f"{criterion}={value:g}", weights))
    return variants
