"""The node agent: discovers the node's RDMA ports, GPUs and their PCIe relations, and publishes
them on the Node as the topology document the extender reads (kube_rdma.core.topology)."""
