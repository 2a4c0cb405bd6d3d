"""Every annotation and label key kube-rdma reads or writes, in one place.

All keys carry the `kube-rdma.io/` prefix. The webhook writes some of them for the extender and
reads others that the extender writes at bind time, so both import them from here.
"""

from __future__ import annotations

PREFIX = "kube-rdma.io/"

# Pod annotations set by users to opt in or out and choose a profile.
INJECT = PREFIX + "inject"
PROFILE = PREFIX + "profile"
CONTAINERS = PREFIX + "containers"

# Namespace label that opts every training pod in the namespace in.
INJECTION = PREFIX + "injection"
INJECTION_ENABLED = "enabled"

# Pod annotation the webhook writes: which profile it applied, and a short hash of it.
APPLIED = PREFIX + "applied"

# Pod annotations the extender writes before binding, read by the pod's containers through the
# downward API when the profile uses the `node` GID strategy.
GID_INDEX = PREFIX + "gid-index"
HCA = PREFIX + "hca"

# Node annotation and label the agent publishes (kube_rdma/core/topology.py is the document's
# schema).
TOPOLOGY = PREFIX + "topology"
RDMA_READY = PREFIX + "rdma-ready"

# Pod annotations that tell the extender what the pod needs of a node's network.
RAILS = PREFIX + "rails"
MIN_RATE = PREFIX + "min-rate-gbps"
MIN_AFFINITY = PREFIX + "min-affinity"

# Pod annotation: the pod needs GPUDirect RDMA (NICs reading GPU memory); nodes without it fail.
REQUIRE_GDR = PREFIX + "require-gdr"

# Node taint the agent sets (with --taint-unhealthy) while the node's rails are unhealthy.
RDMA_UNHEALTHY = PREFIX + "rdma-unhealthy"

# DeviceTaintRules the agent publishes (with --dra-device-taints) for this node's RDMA devices
# that a DRA driver publishes in ResourceSlices: the label on each rule, whose value names the
# node (agent/dra_taints.py), and the taint key on the devices (RDMA_UNHEALTHY above, one key for
# the node's taint and its devices' taints).
DEVICE_TAINT_NODE = PREFIX + "device-taint-node"

# Pod annotations that make pods one gang, placed and bound together.
GANG = PREFIX + "gang"
GANG_SIZE = PREFIX + "gang-size"

# Node labels an admin (or the cluster's provisioning) sets to describe the network: the leaf
# switch and the spine behind it. Gang placement fills the narrowest domain first.
LEAF = PREFIX + "leaf"
SPINE = PREFIX + "spine"

# Pod (or pod template) annotations: the network level a gang must be placed inside, or should
# be (the value: a level's node label, or `nvlink` for the NVLink domain whatever labels it);
# and the level and size of its slices, consecutive ranks placed inside one domain each.
TOPOLOGY_REQUIRED = PREFIX + "topology-required"
TOPOLOGY_PREFERRED = PREFIX + "topology-preferred"
TOPOLOGY_SLICE_REQUIRED = PREFIX + "topology-slice-required"
TOPOLOGY_SLICE_SIZE = PREFIX + "topology-slice-size"

# ConfigMap label of the extender's gang plan records, in its own namespace.
GANG_PLAN = PREFIX + "gang-plan"
# ConfigMap label, beside GANG_PLAN, of a record that holds nodes for a waiting or preempting gang
# rather than a plan.
GANG_HOLD = PREFIX + "gang-hold"

# Pod annotation: "true" makes the webhook add NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET, the
# lines `kube-rdma diagnose` reads to tell which transport NCCL chose.
DEBUG = PREFIX + "debug"

# Node label `kube-rdma acceptance run --label` sets (ACCEPTANCE_PASSED or ACCEPTANCE_FAILED), and
# the node annotation saying when; the extender's --require-acceptance admits only passed nodes.
ACCEPTANCE = PREFIX + "acceptance"
ACCEPTANCE_PASSED = "passed"
ACCEPTANCE_FAILED = "failed"
ACCEPTANCE_TIME = PREFIX + "acceptance-time"

# Pod label on the pods an acceptance run creates (its value: the run's name): they must run on
# nodes not accepted yet, so --require-acceptance lets them through.
ACCEPTANCE_RUN = PREFIX + "acceptance-run"
# Pod labels grouping one test's pods (the headless Service selects its workers) and saying
# which pod is a worker and which the launcher; the annotation numbers the test's round.
ACCEPTANCE_GROUP = PREFIX + "acceptance-group"
ACCEPTANCE_ROLE = PREFIX + "acceptance-role"
ACCEPTANCE_ROUND = PREFIX + "acceptance-round"

ALL = (
    INJECT,
    PROFILE,
    CONTAINERS,
    INJECTION,
    APPLIED,
    GID_INDEX,
    HCA,
    TOPOLOGY,
    RDMA_READY,
    RAILS,
    MIN_RATE,
    REQUIRE_GDR,
    RDMA_UNHEALTHY,
    MIN_AFFINITY,
    GANG,
    GANG_SIZE,
    LEAF,
    SPINE,
    TOPOLOGY_REQUIRED,
    TOPOLOGY_PREFERRED,
    TOPOLOGY_SLICE_REQUIRED,
    TOPOLOGY_SLICE_SIZE,
    GANG_PLAN,
    GANG_HOLD,
    DEBUG,
    ACCEPTANCE,
    ACCEPTANCE_TIME,
    ACCEPTANCE_RUN,
    ACCEPTANCE_GROUP,
    ACCEPTANCE_ROLE,
    ACCEPTANCE_ROUND,
)
