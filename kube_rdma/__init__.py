"""kube-rdma's shared ground: the one command line (`cli`), the core every part builds on
(`core`: keys, the topology document, quantities, config files, logs) and apiserver access
(`kube`)."""
