"""The one way a mutation step refuses a pod, and how a denial quotes what the client sent."""

from __future__ import annotations

from kube_rdma.core.logs import cap

VALUE_LIMIT = 256
"""Bytes (UTF-8) of one value from the request that a denial quotes, at most: an annotation
value may be 256 KiB, and the apiserver passes a denial's message on to the client and its
events whole. review.MESSAGE_LIMIT caps the whole message too."""


class Denied(Exception):
    """The pod cannot be made RDMA-ready as asked; the message says what to change."""


def echo(value: object) -> str:
    """A value from the request, quoted (Python's repr) and capped at VALUE_LIMIT."""
    return repr(cap(str(value), VALUE_LIMIT))


def echo_list(values: object) -> str:
    """Values from the request, each as `echo` would not quote it, comma-separated and capped
    as a whole at VALUE_LIMIT."""
    items = values if isinstance(values, list | tuple) else [values]
    return cap(", ".join(cap(str(v), VALUE_LIMIT) for v in items), VALUE_LIMIT)
