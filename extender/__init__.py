"""The kube-scheduler extender: filters, scores and binds GPU/RDMA pods, and places gangs whole.

kube-scheduler calls it over HTTP (`app.py`, the wire types in `protocol.py`); the scheduling core
(`engine.py`, `filters/`, `scores/`, `gangs/`) reads an in-memory model of the cluster
(`cluster/`) and does no I/O. `sim/` emulates kube-scheduler's side, to drive it without a cluster.
"""
