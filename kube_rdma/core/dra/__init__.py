"""Dynamic Resource Allocation (resource.k8s.io) as kube-rdma reads it: which GPUs and RDMA NICs
a node publishes in ResourceSlices, which of them ResourceClaims hold, and what a pod's claims
ask for.

kube-scheduler's DynamicResources plugin allocates claims itself; kube-rdma reads the same
objects so that the extender's filters, scores and gang plans count DRA devices as they count
device-plugin resources. Pure: no I/O, no import of the parts.
"""
