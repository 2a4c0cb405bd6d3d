"""The webhook's serving certificate: from files, or provisioned by the webhook itself.

With `--self-provision` the webhook keeps its own CA and serving certificate in a Secret and the
CA in its MutatingWebhookConfiguration's caBundle (certs/provision.py), and swaps in renewed
certificates without a restart (certs/reload.py). The server needs its TLS context before the
first pair is read from the cluster, so it starts from a throwaway placeholder that is replaced
before the port opens: aiohttp starts listening only once the app exists.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from certs.generate import generate_ca, generate_serving, write_bundle
from certs.provision import Provisioner, ProvisionSettings, ServingPair
from certs.reload import CertificateReloader
from certs.serving import TLSConfigError, TLSPolicy
from kube_rdma.core.tasks import cancelled
from webhook.app import Settings, create_app


def placeholder_reloader(
    required: list[str], policy: TLSPolicy | None = None
) -> CertificateReloader:
    """A reloader holding a throwaway certificate, never served: the real one replaces it, served
    as `policy` says (default: TLS 1.3)."""
    directory = Path(tempfile.mkdtemp(prefix="kube-rdma-tls-"))
    names = [name.removesuffix(".svc") for name in required] or ["localhost"]
    ca = generate_ca("kube-rdma placeholder")
    write_bundle(directory, ca, generate_serving(ca, [*names, *required]))
    return CertificateReloader(
        directory / "tls.crt", directory / "tls.key", required, policy=policy
    )


async def self_provisioned_app(
    settings: Settings,
    tls: CertificateReloader,
    provision: ProvisionSettings,
    kubeconfig: Path | None,
) -> web.Application:
    """The webhook app serving the certificate it provisions; raises ProvisionError or
    TLSConfigError when that cannot be done."""
    from kubernetes_asyncio import client

    from kube_rdma.kube.kubeconfig import load_config

    await load_config(kubeconfig, server=True)
    api = client.ApiClient()
    provisioner = Provisioner(
        client.CoreV1Api(api), client.AdmissionregistrationV1Api(api), provision
    )
    pair = await provisioner.ensure()
    await provisioner.sync_ca_bundle(pair.ca_bundle_pem)
    if not tls.load_pair(pair.cert_pem, pair.key_pem):
        raise TLSConfigError(f"the certificate in Secret {provision.secret_name} is not usable")
    app = create_app(settings, tls=tls)

    def take(fresh: ServingPair) -> None:
        tls.load_pair(fresh.cert_pem, fresh.key_pem)

    async def keep_current(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(provisioner.run(take, current=pair))
        yield
        await cancelled(task)
        await api.close()

    app.cleanup_ctx.append(keep_current)
    return app
