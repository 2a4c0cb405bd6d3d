"""kube-rdma's shared ground: the core every part builds on (`core`: keys, the topology
document, quantities, config files, logs) and apiserver access (`kube`). It imports nothing
above it; the one command line is `kube_rdma_cli`."""
