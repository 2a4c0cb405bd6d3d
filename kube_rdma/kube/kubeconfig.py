"""How every kube-rdma process reaches the apiserver: a kubeconfig file when given, else the
pod's ServiceAccount (in-cluster)."""

from __future__ import annotations

from pathlib import Path

from kubernetes_asyncio import config


async def load_config(kubeconfig: Path | None) -> None:
    """Configure kubernetes-asyncio's default client from `kubeconfig`, or in-cluster."""
    if kubeconfig is not None:
        await config.load_kube_config(config_file=str(kubeconfig))
    else:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
