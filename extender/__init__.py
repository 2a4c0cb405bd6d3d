"""The kube-scheduler extender and node agent, and the contracts both services share.

The extender owns the annotation and label keys of kube-rdma and the node-topology schema; the
webhook imports them from here, never the reverse.
"""
