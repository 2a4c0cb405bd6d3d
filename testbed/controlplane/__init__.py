"""A real Kubernetes control plane on the loopback, for the end-to-end tests.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from Debian's
`kubernetes` source package (1.20.2; build.sh), started as local processes with temporary
directories, with kube-rdma's own manifests applied in 1.20-compatible variants (render.py) and
kube-rdma's components run beside them, each under its own ServiceAccount. Everything our fake
apiserver and kube-scheduler emulation encode from our reading of Kubernetes is checked here
against the real thing.
"""
