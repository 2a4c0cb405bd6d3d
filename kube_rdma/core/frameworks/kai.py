"""NVIDIA's KAI scheduler (NVIDIA/KAI-Scheduler, docs/topology/README.md): a workload's top
owner asks for a level with `kai.scheduler/topology-required-placement` or
`-preferred-placement`, beside `kai.scheduler/topology` (the Topology's name). Its Topology
objects (`kai.scheduler` v1 and v1alpha1 `topologies`, pkg/apis/kai/v1/topology_types.go) list
the levels.
"""

from __future__ import annotations

GROUP = "kai.scheduler"
TOPOLOGY_VERSIONS = ("v1", "v1alpha1")
"""The versions of its Topology objects, in the order they are tried."""

TOPOLOGY = "kai.scheduler/topology"
TOPOLOGY_REQUIRED_PLACEMENT = "kai.scheduler/topology-required-placement"
TOPOLOGY_PREFERRED_PLACEMENT = "kai.scheduler/topology-preferred-placement"
