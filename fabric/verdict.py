"""The verdict on one nccl-tests run: is this fabric good enough to train on?

A run passes when its best bus bandwidth reaches the expected figure, no result was wrong, no
value was written out of bounds, and NCCL did not fall back to sockets. The best bus bandwidth
is the table's highest (out-of-place or in-place), reached by the large messages; the `Avg bus
bandwidth` footer averages the latency-bound tiny sizes in and says little about the links.

The expected figure is either given (`--min-busbw`) or derived from the node's topology
document: what its usable ports carry together (rails x rate; sysfs reports the data rate of
EDR/HDR/NDR and Ethernet ports, so Gb/s / 8 is GB/s) times a fraction: 0.9 by default, as the
guides of cloud providers and NVIDIA's own cluster acceptance use (some settle for 0.85).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.nccl_log import LogReport
from fabric.nccl_tests import NcclTestsRun
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Topology

DEFAULT_FRACTION = 0.9
SOAK_DROP = 0.1
"""A soak fails when the last repetition's bus bandwidth is this much below the first's."""


@dataclass(frozen=True)
class Expectation:
    busbw: float | None
    """GB/s the best bus bandwidth must reach; None: judge correctness and transport only."""
    basis: str = ""
    """Where the figure comes from (for the reasons), or why there is none."""


NO_THRESHOLD = (
    "no threshold given (--min-busbw GB/s, or --topology FILE for "
    f"{DEFAULT_FRACTION:g} x what the node's ports carry)"
)


def from_topology(topology: Topology, fraction: float) -> Expectation:
    """Every usable port's rate together, in GB/s, times `fraction`."""
    rates = [
        p.rate_gbps
        for nic in topology.nics
        for p in nic.ports
        if p.state == "ACTIVE" and p.healthy and p.rate_gbps
    ]
    peak = sum(rates) / 8
    basis = f"{fraction:g} x {len(rates)} ports' {peak:g} GB/s"
    return Expectation(round(peak * fraction, 3), basis)


def judge(run: NcclTestsRun, log: LogReport, expected: Expectation) -> Json:
    """The JSON answer: what the run showed and the verdict, with a reason per failure."""
    best = run.best()
    reasons = _reasons(run, log, expected)
    return {
        "program": run.program,
        "ranks": len(run.ranks),
        "hosts": list(run.hosts),
        "avg_busbw": run.avg_busbw,
        "max_busbw": best.busbw if best else None,
        "max_busbw_bytes": best.size if best else None,
        "wrong": run.wrong,
        "out_of_bounds": run.out_of_bounds,
        "transport": log.transport if log.seen else "unknown",
        "gdr": log.gdr,
        "expected_busbw": expected.busbw,
        "expected_basis": expected.basis,
        "verdict": "fail" if reasons else "pass",
        "reasons": reasons,
    }


def headline(answer: Json) -> str:
    """The verdict in a line: the best bus bandwidth against the threshold that applied, or
    what the verdict rests on when none did."""
    best = answer["max_busbw"]
    got = f"best bus bandwidth {best:g} GB/s" if best is not None else "no bus bandwidth"
    if answer["expected_busbw"] is not None:
        wanted = f"expected at least {answer['expected_busbw']:g} GB/s"
        return f"{answer['verdict']}: {got}, {wanted} ({answer['expected_basis']})"
    return (
        f"{answer['verdict']}: {got}; no bandwidth bound: {answer['expected_basis']}; the "
        "verdict rests on wrong results, out-of-bounds values, the transport and NCCL's errors"
    )


def _reasons(run: NcclTestsRun, log: LogReport, expected: Expectation) -> list[str]:
    reasons = []
    best = run.best()
    if expected.busbw is not None and (best is None or (best.busbw or 0.0) < expected.busbw):
        got = f"{best.busbw:g} GB/s at {best.size} bytes" if best else "no bus bandwidth"
        reasons.append(
            f"best bus bandwidth {got} is below the expected {expected.busbw:g} GB/s "
            f"({expected.basis})"
        )
    if run.wrong:
        reasons.append(f"{run.wrong} results were wrong (#wrong): data is corrupted somewhere")
    if run.out_of_bounds:
        reasons.append(f"{run.out_of_bounds} values were written out of bounds")
    if log.seen and log.transport == "Socket":
        reasons.append("NCCL used TCP sockets, not RDMA (NET/Socket): run kube-rdma diagnose")
    reasons.extend(f"NCCL reported {e.error} (line {e.line}): {e.meaning}" for e in log.failures)
    return reasons


def soak_reasons(run: NcclTestsRun) -> list[str]:
    """A soak's extra test: the largest size's bus bandwidth must not sink over the run."""
    best = run.best()
    series = run.series(best.size) if best else []
    if len(series) < 2 or series[-1] >= series[0] * (1 - SOAK_DROP):
        return []
    return [
        f"bus bandwidth dropped from {series[0]:g} to {series[-1]:g} GB/s over the soak "
        f"({len(series)} repetitions)"
    ]


def link_flaps(before: Topology, after: Topology, node: str) -> list[str]:
    """A sentence per port whose link_downed counter grew between the two documents."""
    counted = {
        (nic.name, p.port): p.counters.get("link_downed", 0)
        for nic in before.nics
        for p in nic.ports
    }
    reasons = []
    for nic in after.nics:
        for p in nic.ports:
            was = counted.get((nic.name, p.port))
            now = p.counters.get("link_downed", 0)
            if was is not None and now > was:
                reasons.append(
                    f"link flap on {node} {nic.name} port {p.port}: link_downed {was} -> {now}"
                )
    return reasons
