"""Proving the fabric: `kube-rdma acceptance` runs nccl-tests through kube-rdma itself (its
webhook prepares the test pods, its extender places them) and judges the result; `kube-rdma
diagnose` says which transport NCCL used and why a job is slow.

The readers of what the tools print (nccl_tests.py, nccl_log.py, known_errors.py, prefixes.py)
and the judgements (verdict.py, diagnose.py, plan.py, render.py) are pure; run.py and
pod_report.py talk to the apiserver. It sits above the webhook (profile names, the resolver's
name) and the extender (the GPU-NIC pairing), below the CLI.
"""
