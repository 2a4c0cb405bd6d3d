"""The control plane's keys: the apiserver's serving certificate and the service-account key.

The serving certificate comes from `kube-rdma certs generate` (a CA and a certificate for
127.0.0.1), the same command users run for the webhook.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def kube_rdma_command() -> list[str]:
    """The installed `kube-rdma` console script of this interpreter's environment."""
    return [str(Path(sys.executable).parent / "kube-rdma")]


@dataclass(frozen=True)
class Pki:
    ca: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public: Path


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            *kube_rdma_command(),
            "certs",
            "generate",
            "--service",
            "kubernetes",
            "--namespace",
            "default",
            "--localhost",
            "--out",
            str(folder),
        ],
        check=True,
        capture_output=True,
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = folder / "sa.key"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    public = folder / "sa.pub"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(folder / "ca.crt", folder / "tls.crt", folder / "tls.key", private, public)
