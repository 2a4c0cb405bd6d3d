"""The ssh key an acceptance run's launcher uses to start MPI ranks on its workers: fresh per run,
kept only in the run's Secret, deleted with it."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fabric.render import SshKey


def generate() -> SshKey:
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return SshKey(private.decode(), public.decode() + " kube-rdma-acceptance\n")
