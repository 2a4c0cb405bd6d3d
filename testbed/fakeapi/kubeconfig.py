"""A kubeconfig pointing at a fake apiserver, for processes that take `--kubeconfig`.

The fake checks no credentials; the token is there because client libraries expect a user.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from kube_rdma.core.objects import Json

CONTEXT = "fake-apiserver"


def kubeconfig(server: str) -> Json:
    """A kubeconfig document whose current context reaches `server` (a base URL)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {"token": "fake"}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: Path, server: str) -> Path:
    """Write `kubeconfig(server)` to `path` whole: a reader never sees half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(orjson.dumps(kubeconfig(server), option=orjson.OPT_INDENT_2))
    os.replace(partial, path)
    return path
