"""What a simulation schedules: jobs read from a workload file, or generated for the cluster.

A workload file (YAML) lists jobs:

```yaml
jobs:
  - name: pretrain            # optional (job-0001, ...)
    namespace: team-llm       # optional (default)
    arrival: 0                # seconds after the start
    pods: 16
    gpus: 8                   # per pod
    rdma: 1                   # RDMA units per pod (of the cluster's RDMA resource)
    duration: 7200            # seconds it runs once all its pods are bound
    gang: true                # optional: true when pods > 1
    network: macvlan          # optional: macvlan (RoCE) or ib (default: the nodes' link layer)
    priority: 1000            # optional: spec.priority of its pods (default 0)
    preemptionPolicy: Never   # optional: PreemptLowerPriority (default) or Never
    annotations: {kube-rdma.io/min-affinity: PIX}
    dra: true                 # optional: GPUs and NICs through a claim (claim_jobs.py)
```

The generated model (`Generated`, `--generate jobs=N,seed=S,...`) is in docs/simulate.md.
"""

from __future__ import annotations

import difflib
import math
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kube_rdma.core.config_file import ConfigError, read_text
from kubesim.scheduler import Job
from kubesim.simulate.claim_jobs import ClaimJob

DAY = 86_400.0
GANG_SIZES = ((2, 30), (4, 25), (8, 20), (16, 12), (32, 8), (64, 5))
"""(pods, weight) of a gang: bigger gangs are rarer."""
SINGLETON_GPUS = ((1, 25), (2, 20), (4, 20), (8, 35))
NAMESPACES = ("team-llm", "team-vision", "ml-research")
DURATION_SIGMA = 1.0
"""Spread of the lognormal run times: the longest jobs run some ten times the mean."""
SHORTEST, LONGEST = 60.0, 7 * DAY
LINK_LAYERS = {"macvlan": "Ethernet", "ib": "InfiniBand"}
"""The link layer of the RDMA ports each of the webhook's network modes uses."""
PRIORITY_NAMES = {"high": 1000, "medium": 500, "low": 0}
"""What a priority's name in `--generate priorities=...` means; a number means itself. `low` is
0, the priority of a pod without a PriorityClass (a snapshot's running pods, as a rule), so low
jobs preempt none of them; user PriorityClasses may go up to 1,000,000,000."""


class JobEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, min_length=1)
    namespace: str = Field(default="default", min_length=1)
    arrival: float = Field(ge=0)
    pods: int = Field(default=1, ge=1)
    gpus: int = Field(ge=0)
    rdma: int = Field(default=1, ge=0)
    duration: float = Field(gt=0)
    gang: bool | None = None
    network: Literal["macvlan", "ib"] | None = None
    """None: the network mode of the link layer most nodes have, as for generated jobs."""
    priority: int = Field(default=0, ge=-(2**31), le=1_000_000_000)
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    annotations: dict[str, str] = {}
    dra: bool = False
    """The pods take `gpus` GPU-NIC pairs through a resource claim instead of extended
    resources (`rdma` is then unused)."""

    @model_validator(mode="after")
    def _gang_has_pods(self) -> JobEntry:
        if self.gang and self.pods < 2:
            raise ValueError("a gang needs pods: 2 or more")
        return self


class WorkloadFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    jobs: list[JobEntry] = Field(min_length=1)


@dataclass(frozen=True)
class Shape:
    """What a workload needs to know of the cluster it runs on."""

    gpus: int
    """GPUs allocatable in all, minus those the snapshot's running pods hold."""
    whole_nodes: int
    """Nodes with 8 or more GPUs."""
    rdma_resource: str | None
    """The RDMA resource pods request (None: the nodes offer none)."""
    link_layers: tuple[tuple[str, int], ...] = ()
    """(link layer, nodes with RDMA ports of it): a node with both counts in both."""

    def network(self) -> Literal["macvlan", "ib"]:
        """The network mode of the link layer most nodes have; macvlan on a tie or without
        any topology."""
        counts = dict(self.link_layers)
        return "ib" if counts.get("InfiniBand", 0) > counts.get("Ethernet", 0) else "macvlan"


def network_warnings(jobs: list[Job], shape: Shape) -> list[str]:
    """One line per network mode the jobs use whose link layer fewer nodes have than another:
    the extender places their pods only on those few, kube-scheduler anywhere (without a
    usable NIC)."""
    counts = dict(shape.link_layers)
    if not counts:
        return []
    most = max(counts.values())
    warnings = []
    for network, n in sorted(Counter(j.network for j in jobs).items()):
        layer = LINK_LAYERS.get(network)
        have = counts.get(layer or "", 0)
        if layer is None or have >= most:
            continue
        better = shape.network()
        warnings.append(
            f"{n} of {len(jobs)} jobs use network={network} ({layer} RDMA ports), which "
            f"{have} node(s) have where {counts[LINK_LAYERS[better]]} have "
            f"{LINK_LAYERS[better]}: the extender places these jobs only on those {have}, "
            f"kube-scheduler anywhere (without a usable NIC). Set network={better} "
            "(--generate network=..., or network: in each job of the workload file) unless "
            "that is what you mean to try"
        )
    return warnings


def read_workload(path: Path, shape: Shape) -> list[Job]:
    """The jobs of a workload file; raises ConfigError naming the file, the entry, the problem."""
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from e
    try:
        entries = WorkloadFile.model_validate(data).jobs
    except ValidationError as e:
        raise ConfigError(f"{path}: {_problem(e)}") from e
    names = [entry.name or f"job-{i:04d}" for i, entry in enumerate(entries, 1)]
    seen: set[tuple[str, str]] = set()
    for index, (entry, name) in enumerate(zip(entries, names, strict=True)):
        if (entry.namespace, name) in seen:
            raise ConfigError(f"{path}: jobs[{index}].name: {entry.namespace}/{name} appears twice")
        seen.add((entry.namespace, name))
    return [_job(entry, name, shape) for entry, name in zip(entries, names, strict=True)]


def _problem(error: ValidationError) -> str:
    """The first problem, a key the file may not have first: a misspelt key (`duraton:`) is also
    a missing one (`duration`), and the unknown key is what to fix."""
    items = error.errors()
    item = next((i for i in items if i["type"] == "extra_forbidden"), items[0])
    loc = item["loc"]
    if item["type"] == "extra_forbidden":
        loc, key = loc[:-1], str(loc[-1])
    where = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc)
    where = where.replace(".[", "[") or "top level"
    if item["type"] != "extra_forbidden":
        return f"{where}: {item['msg'].removeprefix('Value error, ')}"
    model = JobEntry if loc else WorkloadFile
    return unknown_key(where, key, list(model.model_fields))


def unknown_key(where: str, key: str, known: list[str]) -> str:
    """`jobs[0]: unknown key 'duraton' (did you mean duration?); the keys are ...`"""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}: unknown key {key!r}{hint}; the keys are {', '.join(known)}"


def _job(entry: JobEntry, name: str, shape: Shape) -> Job:
    rdma = entry.rdma if shape.rdma_resource else 0
    kind = ClaimJob if entry.dra else Job
    return kind(
        name=name,
        namespace=entry.namespace,
        members=entry.pods,
        gpus=entry.gpus,
        arrival=entry.arrival,
        duration=entry.duration,
        network=entry.network or shape.network(),
        cpu_per_gpu=0,
        memory_per_gpu_gi=0,
        rdma=rdma,
        rdma_resource=shape.rdma_resource or "",
        annotations=dict(entry.annotations),
        together=entry.gang if entry.gang is not None else entry.pods > 1,
        priority=entry.priority,
        preemption_policy="Never" if entry.preemptionPolicy == "Never" else None,
    )


@dataclass(frozen=True)
class Generated:
    """A day of a training cluster's jobs, sized to the cluster: see docs/simulate.md."""

    jobs: int = 1000
    seed: int = 0
    hours: float = 24.0
    """The arrivals spread over this span (Poisson, jobs / hours per hour)."""
    load: float = 0.6
    """GPU-time the jobs ask for, as a share of the cluster's free GPUs over `hours`."""
    gangs: float = 0.4
    """Share of jobs that are gangs of 8-GPU pods; the others are single pods of 1-8 GPUs."""
    network: Literal["macvlan", "ib"] | None = None
    """None: the network mode of the link layer most nodes have (Shape.network)."""
    priorities: tuple[tuple[int, float], ...] = ()
    """(priority, share of the jobs); none: every job at priority 0."""
    dra: float = 0.0
    """Share of the jobs whose pods take their GPUs and NICs through a claim."""

    def __post_init__(self) -> None:
        problems = []
        if self.priorities and abs(sum(s for _, s in self.priorities) - 1) > 1e-6:
            total = sum(s for _, s in self.priorities)
            problems.append(f"priorities' shares must add up to 1, got {total:g}")
        if self.jobs < 1:
            problems.append(f"jobs must be at least 1, got {self.jobs}")
        if self.hours <= 0:
            problems.append(f"hours must be above 0, got {self.hours:g}")
        if not 0 < self.load <= 10:
            problems.append(f"load must be above 0 and at most 10, got {self.load:g}")
        if not 0 <= self.gangs <= 1:
            problems.append(f"gangs must be 0 to 1, got {self.gangs:g}")
        if not 0 <= self.dra <= 1:
            problems.append(f"dra must be 0 to 1, got {self.dra:g}")
        if self.network not in (None, "macvlan", "ib"):
            problems.append(f"network must be macvlan or ib, got {self.network}")
        if problems:
            raise ConfigError("--generate: " + "; ".join(problems))

    def stream(self, shape: Shape) -> list[Job]:
        rng = random.Random(self.seed)
        # a stream of its own, so that the same seed gives the same jobs with or without them
        ranks = random.Random(f"{self.seed}/priorities")
        claims = random.Random(f"{self.seed}/dra")
        sizes = [(s, w) for s, w in GANG_SIZES if s <= max(2, shape.whole_nodes // 4)]
        mean_gpus = self.gangs * 8 * _mean(sizes) + (1 - self.gangs) * _mean(SINGLETON_GPUS)
        span = self.hours * 3600
        mean_duration = self.load * max(shape.gpus, 1) * span / (self.jobs * mean_gpus)
        arrival, jobs = 0.0, []
        network = self.network or shape.network()
        for index in range(self.jobs):
            arrival += rng.expovariate(self.jobs / span)
            gang = rng.random() < self.gangs
            pods = _pick(rng, sizes) if gang else 1
            gpus = 8 if gang else _pick(rng, SINGLETON_GPUS)
            spread = math.exp(rng.gauss(0, DURATION_SIGMA) - DURATION_SIGMA**2 / 2)
            kind = ClaimJob if self.dra and claims.random() < self.dra else Job
            jobs.append(
                kind(
                    name=f"{'gang' if gang else 'job'}-{index:04d}",
                    namespace=rng.choice(NAMESPACES),
                    members=pods,
                    gpus=gpus,
                    arrival=arrival,
                    duration=min(max(mean_duration * spread, SHORTEST), LONGEST),
                    network=network,
                    cpu_per_gpu=0,
                    memory_per_gpu_gi=0,
                    rdma=1 if shape.rdma_resource else 0,
                    rdma_resource=shape.rdma_resource or "",
                    priority=_pick(ranks, self.priorities) if self.priorities else 0,
                )
            )
        return jobs


def parse_generate(text: str) -> Generated:
    """`jobs=1000,seed=3,hours=24,load=0.6,gangs=0.4,network=ib,priorities=high:0.2/low:0.8,
    dra=0.5`; raises ConfigError."""
    fields: dict[str, object] = {}
    kinds = {"jobs": int, "seed": int, "hours": float, "load": float, "gangs": float, "dra": float}
    known = [*kinds, "network", "priorities"]
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(
                f"--generate: {part!r} is not KEY=VALUE with KEY one of {', '.join(known)}"
            )
        if key not in known:
            raise ConfigError(unknown_key("--generate", key, known))
        if key == "priorities":
            fields[key] = parse_priorities(value)
            continue
        try:
            fields[key] = kinds[key](value) if key in kinds else value.strip()
        except ValueError:
            raise ConfigError(f"--generate: {key}={value} is not a number") from None
    return Generated(**fields)  # type: ignore[arg-type]


def parse_priorities(text: str) -> tuple[tuple[int, float], ...]:
    """`high:0.2/low:0.8`: each priority (a name of PRIORITY_NAMES, or a number) and its share
    of the jobs; raises ConfigError."""
    found = []
    for part in text.split("/"):
        name, sep, share = part.partition(":")
        name = name.strip()
        value = PRIORITY_NAMES.get(name)
        if value is None and name.lstrip("-").isdigit():
            value = int(name)
        if value is None or not sep:
            names = ", ".join(PRIORITY_NAMES)
            raise ConfigError(
                f"--generate: priorities={text}: {part!r} is not PRIORITY:SHARE with PRIORITY "
                f"a number or one of {names}"
            )
        try:
            amount = float(share)
        except ValueError:
            raise ConfigError(f"--generate: priorities={text}: {share!r} is not a number") from None
        if amount < 0:
            raise ConfigError(f"--generate: priorities={text}: a share must not be negative")
        found.append((value, amount))
    return tuple(found)


def _mean(weighted: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> float:
    total = sum(w for _, w in weighted)
    return sum(v * w for v, w in weighted) / total


def _pick(
    rng: random.Random,
    weighted: tuple[tuple[int, int], ...] | tuple[tuple[int, float], ...] | list[tuple[int, int]],
) -> int:
    values, weights = zip(*weighted, strict=True)
    return int(rng.choices(values, weights)[0])
