"""TLS for kube-rdma's HTTPS services: certificate generation, server contexts, reload.

Both the webhook and the extender serve TLS through this package; it imports nothing else of
kube-rdma, so either service may depend on it.
"""
