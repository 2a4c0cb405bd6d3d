"""The one way a mutation step refuses a pod."""

from __future__ import annotations


class Denied(Exception):
    """The pod cannot be made RDMA-ready as asked; the message says what to change."""
