"""What every part of kube-rdma shares and nothing of kube-rdma is imported by: the annotation and
label keys, the agent-to-extender topology contract, quantities, workload keys, config files and
the log format."""
