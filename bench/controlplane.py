"""Gangs through a real kube-scheduler 1.20, and the restarts, timed (testbed/controlplane).

The e2e set-up (`make e2e`): etcd, kube-apiserver, kube-controller-manager and kube-scheduler
1.20.2 built from Debian's source package, 16 API-only 8-GPU nodes in 4 leaves of 4, two leaves
per spine, and kube-rdma's webhook and extender as local processes under their own
ServiceAccounts. Each round, in a fresh namespace:
- two gangs of 4 created interleaved: first create to both bound whole;
- a gang of 6, wider than a leaf: first create to bound whole;
- the extender killed (SIGKILL) with 3 members of a gang of 4 at its bind barrier while
  kube-scheduler keeps running, the 4th member created while it is down: restart to the gang
  bound whole;
- the same with kube-scheduler killed and restarted too (the whole scheduler pair).

    python -m bench.controlplane [--rounds 3]

Labelled "1.20 control plane": the restart times are 1.20's scheduling queue (docs/ha.md says
what 1.30-1.34 do instead).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from collections.abc import Callable

from testbed.controlplane.components import Stack
from testbed.controlplane.gangs import create_pods, members, restart_mid_barrier, wait_bound
from testbed.controlplane.objects import create_namespace, delete_pods
from testbed.controlplane.session import running

Scenario = Callable[[Stack, str], float]


def interleaved(stack: Stack, namespace: str) -> float:
    api = stack.plane.admin
    a, b = members("ga", namespace, 4), members("gb", namespace, 4)
    start = time.monotonic()
    create_pods(api, [pod for pair in zip(a, b, strict=True) for pod in pair])
    wait_bound(api, namespace, "ga", 4)
    wait_bound(api, namespace, "gb", 4)
    return time.monotonic() - start


def wide(stack: Stack, namespace: str) -> float:
    api = stack.plane.admin
    start = time.monotonic()
    create_pods(api, members("wide", namespace, 6))
    wait_bound(api, namespace, "wide", 6)
    return time.monotonic() - start


def extender_restart(stack: Stack, namespace: str) -> float:
    return restart_mid_barrier(stack, stack.plane.admin, namespace, "g", 4, pair=False)


def pair_restart(stack: Stack, namespace: str) -> float:
    return restart_mid_barrier(stack, stack.plane.admin, namespace, "g", 4, pair=True)


SCENARIOS: dict[str, Scenario] = {
    "two gangs of 4, interleaved: create to both bound whole": interleaved,
    "a gang of 6 over two leaves: create to bound whole": wide,
    "extender restarted mid-barrier: restart to gang of 4 bound whole": extender_restart,
    "extender + kube-scheduler restarted mid-barrier: restart to bound whole": pair_restart,
}


def measure(stack: Stack, scenario: Scenario) -> float:
    namespace = f"bench-{secrets.token_hex(3)}"
    create_namespace(stack, namespace, {})
    try:
        return scenario(stack, namespace)
    finally:
        delete_pods(stack.plane.admin, namespace)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.controlplane")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    results: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    with running() as stack:
        print(f"1.20 control plane ({stack.plane.binaries.version}), {args.rounds} rounds")
        for _ in range(args.rounds):
            for name, scenario in SCENARIOS.items():
                results[name].append(measure(stack, scenario))
    print(f"{'scenario':74} {'min':>7} {'median':>7} {'max':>7}")
    for name, seconds in results.items():
        low, mid, high = min(seconds), statistics.median(seconds), max(seconds)
        print(f"{name:74} {low:6.2f}s {mid:6.2f}s {high:6.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
