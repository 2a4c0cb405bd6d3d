"""Scheduling without a cluster: an emulated kube-scheduler and the simulator that drives it.

`kubesim.scheduler` plays kube-scheduler's side of the extender protocol (queue, backoff, node
sampling, preemption, binding) against any extender, over HTTP or in memory; it knows the
extender only by that wire protocol. `kubesim.simulate` runs it on simulated time against a
snapshot or a generated cluster, with kube-rdma's real extender in the same process, and
reports what each variant did (`kube-rdma simulate`).
"""
