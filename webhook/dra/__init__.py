"""Pods that get their GPUs and RDMA NICs through Dynamic Resource Allocation.

`kinds` says which devices a claim gives (pure), `source` reads the claims, templates and
classes from the apiserver (or a file), `resolve` puts the two together for one pod, and
`attach` gives an opted-in pod the profile's template of aligned GPU-NIC pairs (pure).
"""
