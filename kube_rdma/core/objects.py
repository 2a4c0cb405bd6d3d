"""Kubernetes objects as kube-rdma handles them: decoded JSON, walked by key.

Pods, Nodes, admission reviews and extender bodies arrive as JSON and are read and written as
plain dicts, so the patch a webhook returns is a diff of two dicts and nothing is lost in a model
round trip.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
