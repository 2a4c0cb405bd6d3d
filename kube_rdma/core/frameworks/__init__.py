"""The words of the training frameworks and gang schedulers whose pods kube-rdma reads: one
module per upstream project, each naming the labels, annotations and API groups that project's
controllers write, and the small pure readers of them (a gang's name, a member's rank, a pod's
replica role).

The extender, the webhook and the simulator read a framework's keys here and nowhere else; the
modules import nothing outside kube_rdma.core. kube-rdma's own `kube-rdma.io/` keys are in
kube_rdma/core/keys.py.
"""
