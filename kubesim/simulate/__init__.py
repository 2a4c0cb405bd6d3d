"""`kube-rdma simulate` and `kube-rdma snapshot`: try scoring weights on a cluster's shape.

The emulated kube-scheduler of kubesim/scheduler drives the extender's real Scheduler (the code that
serves /filter, /prioritize and /bind) through the same JSON bodies as on the wire, but in one
process, over an apiserver kept in memory, on an event loop whose clock is simulated: a day of
arrivals runs in seconds, and the gang barrier's and plans' timeouts run on the same clock.
"""
