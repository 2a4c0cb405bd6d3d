"""Port health across scans: a link that is up but keeps counting errors is not healthy.

A port is unhealthy while it is not ACTIVE/LinkUp, or when one of its error counters grew since
the previous scan; it becomes healthy again only after `recover_after` clean scans in a row, so
a flapping link does not flap the node's readiness with it. A counter that went down (a driver
reload or a manual reset) is a new baseline, not an error.
"""

from __future__ import annotations

from kube_rdma.core.topology import Nic, Port, Topology

PortKey = tuple[str, int]


class HealthTracker:
    def __init__(self, recover_after: int = 3) -> None:
        if recover_after < 1:
            raise ValueError("recover_after must be at least 1")
        self.recover_after = recover_after
        self._counters: dict[PortKey, dict[str, int]] = {}
        self._clean_scans: dict[PortKey, int] = {}

    def update(self, topology: Topology) -> Topology:
        """`topology` with each port's `healthy` judged against the previous scans."""
        nics = tuple(
            nic.model_copy(update={"ports": tuple(self._judge(nic, p) for p in nic.ports)})
            for nic in topology.nics
        )
        return topology.model_copy(update={"nics": nics})

    def _judge(self, nic: Nic, port: Port) -> Port:
        key = (nic.name, port.port)
        previous = self._counters.get(key)
        self._counters[key] = dict(port.counters)
        grew = previous is not None and any(
            value > previous.get(name, value) for name, value in port.counters.items()
        )
        if not port.healthy or grew:
            self._clean_scans[key] = 0
            return port.model_copy(update={"healthy": False})
        if key not in self._clean_scans:
            return port
        self._clean_scans[key] += 1
        if self._clean_scans[key] >= self.recover_after:
            del self._clean_scans[key]
            return port
        return port.model_copy(update={"healthy": False})


def rdma_ready(topology: Topology) -> bool:
    """At least one RDMA port is ACTIVE and healthy."""
    return any(p.state == "ACTIVE" and p.healthy for nic in topology.nics for p in nic.ports)
