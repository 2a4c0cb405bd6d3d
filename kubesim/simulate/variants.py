"""The variants a simulation compares: plain kube-scheduler, the extender with each weights file
(or its default weights when none is given), and the extender with each value of a sweep.

With `--native-gangs`, kube-scheduler with its own gang scheduling (`kube-scheduler+gangs`)
comes second, and every gang job gets a native PodGroup (`with_pod_groups`) in every variant.

A sweep (`--sweep CRITERION=v1,v2,...`) varies one criterion of the last weights file given (or
of the default weights) and keeps the others.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pydantic import ValidationError

from extender.weights import CRITERIA, DEFAULT, Weights, parse_weights
from kube_rdma.core.config_file import ConfigError, read_text
from kubesim.scheduler import Job
from kubesim.simulate.run import Variant

PLAIN = "kube-scheduler"
NATIVE = "kube-scheduler+gangs"


def build_variants(
    weights_files: list[Path], sweep: str | None, native_gangs: bool = False
) -> list[Variant]:
    """Raises ConfigError naming the file or the option, the entry and the problem."""
    variants = [Variant(PLAIN, None)]
    if native_gangs:
        variants.append(Variant(NATIVE, None, native_gangs=True))
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


def with_pod_groups(jobs: list[Job]) -> list[Job]:
    """Every gang given a native PodGroup (its pods keep kube-rdma's gang annotations)."""
    return [dataclasses.replace(j, pod_group=True) if j.gang else j for j in jobs]
