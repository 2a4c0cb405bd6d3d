"""How every kube-rdma process reaches the apiserver: a kubeconfig file when given, else the
pod's ServiceAccount (in-cluster)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kubernetes_asyncio import config


async def load_config(kubeconfig: Path | None) -> None:
    """Configure kubernetes-asyncio's default client from `kubeconfig`, or in-cluster."""
    if kubeconfig is not None:
        # One stat, before kubernetes-asyncio's vaguer error (it reads the file blocking too).
        if not os.path.isfile(kubeconfig):  # noqa: ASYNC240
            raise FileNotFoundError(errno.ENOENT, "no such kubeconfig file", str(kubeconfig))
        try:
            await config.load_kube_config(config_file=str(kubeconfig))
        except (TypeError, AttributeError) as e:
            # kubernetes-asyncio indexes the parsed YAML without checking that it is a mapping.
            raise config.ConfigException(
                f"{kubeconfig} is not a kubeconfig (expected a mapping with clusters, "
                "contexts and users)"
            ) from e
    else:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
