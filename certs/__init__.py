"""TLS for kube-rdma's HTTPS services: certificate generation, server contexts, reload.

Both the webhook and the extender serve TLS through this package; it depends only on the shared
core and apiserver access (kube_rdma.core, kube_rdma.kube), so either service may depend on it.
"""
