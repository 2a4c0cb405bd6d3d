"""How kube-rdma talks to the apiserver: configuration, list and watch, calls and their errors."""
