"""Self-provisioned TLS against the HTTP-level fake apiserver, through kubernetes-asyncio: the
first start creates the Secret and the caBundle, later starts write nothing, replicas racing end
with one Secret, renewal keeps the CA, and a CA rotation keeps the apiserver trusting every
certificate served along the way."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from kubernetes_asyncio import client

from certs.generate import KeyPair, generate_ca, generate_serving, service_dns_names
from certs.provision import Provisioner, ProvisionError, ProvisionSettings, ServingPair
from testbed.fakeapi import RESOURCES, FakeApiServer, RecordedRequest, Resource, eventually
from testbed.net import refusing_port

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE, SERVICE = "kube-rdma", "kube-rdma-webhook"
SECRET = "kube-rdma-webhook-tls"
SECRET_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}"
CONFIG_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kube-rdma"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TLS_RESOURCES = {
    **RESOURCES,
    "secrets": Resource("Secret", True),
    "mutatingwebhookconfigurations": Resource(
        "MutatingWebhookConfiguration", False, "admissionregistration.k8s.io/v1"
    ),
}
FOUR_KEYS = ["ca.crt", "ca.key", "tls.crt", "tls.key"]


@dataclass
class Clock:
    at: dt.datetime = START

    def now(self) -> dt.datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += dt.timedelta(**delta)


@dataclass
class Cluster:
    """The fake apiserver, a client for it and a clock shared by every replica."""

    fake: FakeApiServer
    api: Any
    clock: Clock = field(default_factory=Clock)

    def settings(self, **overrides: Any) -> ProvisionSettings:
        return ProvisionSettings(NAMESPACE, SERVICE, now=self.clock.now, **overrides)

    def replica(self, core: Any = None, **overrides: Any) -> Provisioner:
        core = core or client.CoreV1Api(self.api)
        admission = client.AdmissionregistrationV1Api(self.api)
        return Provisioner(core, admission, self.settings(**overrides))

    def secret(self) -> dict[str, bytes]:
        data = self.fake.get("secrets", SECRET, NAMESPACE)["data"]
        return {name: base64.b64decode(value) for name, value in data.items()}

    def bundles(self) -> list[bytes]:
        """The decoded caBundle of each webhook of the configuration."""
        webhooks = self.fake.get("mutatingwebhookconfigurations", "kube-rdma")["webhooks"]
        return [base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in webhooks]

    def writes(self, since: int = 0) -> list[RecordedRequest]:
        return [r for r in self.fake.requests[since:] if r.method != "GET"]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with FakeApiServer(TLS_RESOURCES) as fake, fake.api_client() as api:
        manifest = ROOT / "manifests/webhook/mutatingwebhookconfiguration.yaml"
        fake.create("mutatingwebhookconfigurations", yaml.safe_load(manifest.read_text()))
        yield Cluster(fake, api)


@pytest.fixture(autouse=True)
def no_secrets_in_logs(caplog: pytest.LogCaptureFixture) -> Any:
    """Every test here also checks that nothing logged holds PEM, plain or base64."""
    caplog.set_level(logging.DEBUG)
    yield
    assert "BEGIN" not in caplog.text
    assert "LS0tLS1CRUdJT" not in caplog.text  # base64 of "-----BEGIN"


async def start(replica: Provisioner) -> ServingPair:
    """What `kube-rdma webhook --self-provision` does before serving."""
    pair = await replica.ensure()
    await replica.sync_ca_bundle(pair.ca_bundle_pem)
    return pair


def cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def issued_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    try:
        cert(cert_pem).verify_directly_issued_by(cert(ca_pem))
    except Exception:
        return False
    return True


def trusted_by_apiserver(cluster: Cluster, cert_pem: bytes, key_pem: bytes) -> bool:
    """Whether a TLS client trusting each webhook's caBundle, as the apiserver does, completes
    a handshake with a server presenting `cert_pem` for the Service's DNS name."""
    return all(handshake(bundle, cert_pem, key_pem) for bundle in cluster.bundles())


def handshake(bundle: bytes, cert_pem: bytes, key_pem: bytes) -> bool:
    """A TLS 1.2+ handshake in memory; False when the client refuses the server's certificate
    (any other failure is an error of the test, and raised)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "tls.crt").write_bytes(cert_pem)
        (Path(folder) / "tls.key").write_bytes(key_pem)
        server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_context.load_cert_chain(Path(folder) / "tls.crt", Path(folder) / "tls.key")
    client_context = ssl.create_default_context(cadata=bundle.decode())
    pipes = [ssl.MemoryBIO() for _ in range(4)]
    client_end = client_context.wrap_bio(
        pipes[0], pipes[1], server_hostname=f"{SERVICE}.{NAMESPACE}.svc"
    )
    server_end = server_context.wrap_bio(pipes[2], pipes[3], server_side=True)
    done = {id(client_end): False, id(server_end): False}
    for _ in range(10):
        for end in (client_end, server_end):
            try:
                end.do_handshake()
                done[id(end)] = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLCertVerificationError:
                return False
        pipes[2].write(pipes[1].read())
        pipes[0].write(pipes[3].read())
        if all(done.values()):
            return True
    raise AssertionError("the handshake did not complete in 10 exchanges")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- first and later starts --------------------------------------------------------------------


async def test_first_start_creates_the_secret_and_trusts_its_ca(cluster: Cluster) -> None:
    version = cluster.fake.version
    pair = await start(cluster.replica())

    stored = cluster.fake.get("secrets", SECRET, NAMESPACE)
    assert stored["type"] == "kubernetes.io/tls"
    assert stored["metadata"]["labels"] == {
        "app.kubernetes.io/name": "kube-rdma",
        "app.kubernetes.io/component": "webhook",
    }
    secret = cluster.secret()
    assert sorted(secret) == FOUR_KEYS
    assert (pair.cert_pem, pair.key_pem, pair.ca_bundle_pem) == (
        secret["tls.crt"],
        secret["tls.key"],
        secret["ca.crt"],
    )
    serving = cert(secret["tls.crt"])
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "kube-rdma-webhook",
        "kube-rdma-webhook.kube-rdma",
        "kube-rdma-webhook.kube-rdma.svc",
        "kube-rdma-webhook.kube-rdma.svc.cluster.local",
    ]
    assert issued_by(secret["tls.crt"], secret["ca.crt"])
    assert serving.not_valid_after_utc - serving.not_valid_before_utc == dt.timedelta(days=365)
    ca = cert(secret["ca.crt"])
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == dt.timedelta(days=3650)

    post, patch = cluster.writes()
    assert (post.method, post.path) == ("POST", f"/api/v1/namespaces/{NAMESPACE}/secrets")
    assert (patch.method, patch.path, patch.content_type) == (
        "PATCH",
        CONFIG_PATH,
        "application/json-patch+json",
    )
    assert patch.body == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": str(version)},
        {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": b64(secret["ca.crt"])},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": b64(secret["ca.crt"])},
    ]
    assert cluster.bundles() == [secret["ca.crt"], secret["ca.crt"]]
    config = cluster.fake.get("mutatingwebhookconfigurations", "kube-rdma")
    assert config["webhooks"][0]["clientConfig"]["service"]["name"] == SERVICE


async def test_a_second_start_reuses_the_secret_without_writes(cluster: Cluster) -> None:
    first = await start(cluster.replica())
    seen = len(cluster.fake.requests)
    assert await start(cluster.replica()) == first
    assert cluster.writes(seen) == []


class RaceToCreate:
    """A CoreV1Api whose first Secret read waits for the other replica's: both find no Secret,
    so both try to create one."""

    def __init__(self, api: Any, barrier: asyncio.Barrier) -> None:
        self._api, self._barrier, self._first = client.CoreV1Api(api), barrier, True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

    async def read_namespaced_secret(self, *args: Any, **kwargs: Any) -> Any:
        response = await self._api.read_namespaced_secret(*args, **kwargs)
        if self._first:
            self._first = False
            await self._barrier.wait()
        return response


async def test_replicas_starting_together_agree_on_one_secret(cluster: Cluster) -> None:
    version = cluster.fake.version
    barrier = asyncio.Barrier(2)
    a, b = (cluster.replica(RaceToCreate(cluster.api, barrier)) for _ in range(2))

    pair_a, pair_b = await asyncio.gather(start(a), start(b))

    assert pair_a == pair_b
    assert [r.method for r in cluster.writes() if r.path.endswith("/secrets")] == ["POST", "POST"]
    assert len(cluster.fake.objects("secrets")) == 1
    assert cluster.secret()["tls.crt"] == pair_a.cert_pem
    assert cluster.bundles() == [pair_a.ca_bundle_pem] * 2
    assert cluster.fake.version == version + 2  # one create and one caBundle patch landed


# --- renewal -----------------------------------------------------------------------------------


async def test_the_serving_certificate_is_renewed_past_two_thirds_of_its_life(
    cluster: Cluster,
) -> None:
    first = await start(cluster.replica())
    seen = len(cluster.fake.requests)
    cluster.clock.advance(days=243)  # 122 of 365 days left: more than a third
    assert await start(cluster.replica()) == first
    assert cluster.writes(seen) == []

    read_version = cluster.fake.get("secrets", SECRET, NAMESPACE)["metadata"]["resourceVersion"]
    cluster.clock.advance(days=1)
    renewed = await start(cluster.replica())

    (put,) = cluster.writes(seen)
    assert (put.method, put.path) == ("PUT", SECRET_PATH)
    assert put.body["metadata"]["resourceVersion"] == read_version
    secret = cluster.secret()
    assert sorted(secret) == FOUR_KEYS
    assert renewed.ca_bundle_pem == first.ca_bundle_pem == secret["ca.crt"]
    assert renewed.cert_pem == secret["tls.crt"] != first.cert_pem
    assert issued_by(renewed.cert_pem, secret["ca.crt"])
    assert cert(renewed.cert_pem).not_valid_before_utc == cluster.clock.at - dt.timedelta(minutes=5)


def other_replica_renews_first(cluster: Cluster) -> Any:
    """A CoreV1Api whose first Secret replace is preceded by another replica's renewal, so it
    carries a stale resourceVersion."""

    class Core:
        def __init__(self) -> None:
            self._api, self._first = client.CoreV1Api(cluster.api), True

        def __getattr__(self, name: str) -> Any:
            return getattr(self._api, name)

        async def replace_namespaced_secret(self, *args: Any, **kwargs: Any) -> Any:
            if self._first:
                self._first = False
                await cluster.replica().ensure()
            return await self._api.replace_namespaced_secret(*args, **kwargs)

    return Core()


async def test_a_renewal_that_loses_to_another_replica_adopts_its_certificate(
    cluster: Cluster,
) -> None:
    await start(cluster.replica())
    cluster.clock.advance(days=300)
    seen = len(cluster.fake.requests)

    pair = await cluster.replica(other_replica_renews_first(cluster)).ensure()

    assert [r.method for r in cluster.writes(seen)] == ["PUT", "PUT"]  # theirs, then our stale one
    assert pair.cert_pem == cluster.secret()["tls.crt"]
    assert [r.method for r in cluster.fake.requests[-2:]] == ["PUT", "GET"]  # 409, re-read


async def test_a_conflicting_renewal_is_read_again_and_retried(cluster: Cluster) -> None:
    await start(cluster.replica())
    cluster.clock.advance(days=300)
    cluster.fake.fail("PUT", SECRET_PATH, 409)
    seen = len(cluster.fake.requests)

    pair = await cluster.replica().ensure()

    assert [(r.method, r.path) for r in cluster.fake.requests[seen:]] == [
        ("GET", SECRET_PATH),
        ("PUT", SECRET_PATH),  # 409
        ("GET", SECRET_PATH),
        ("PUT", SECRET_PATH),
    ]
    assert pair.cert_pem == cluster.secret()["tls.crt"]
    assert issued_by(pair.cert_pem, cluster.secret()["ca.crt"])


def mismatched_key(ca: KeyPair, serving: KeyPair) -> KeyPair:
    return KeyPair(serving.cert_pem, generate_serving(ca, ["x"], now=START).key_pem)


def wrong_names(ca: KeyPair, serving: KeyPair) -> KeyPair:
    return generate_serving(ca, service_dns_names("other", NAMESPACE), now=START)


def foreign_ca(ca: KeyPair, serving: KeyPair) -> KeyPair:
    return generate_serving(generate_ca("someone else", START), [SERVICE], now=START)


def garbage(ca: KeyPair, serving: KeyPair) -> KeyPair:
    return KeyPair(b"not a certificate", b"")


@pytest.mark.parametrize("defect", [mismatched_key, wrong_names, foreign_ca, garbage])
async def test_an_unusable_serving_pair_is_replaced_from_the_same_ca(
    cluster: Cluster, defect: Callable[[KeyPair, KeyPair], KeyPair]
) -> None:
    await start(cluster.replica())
    secret = cluster.secret()
    ca = KeyPair(secret["ca.crt"], secret["ca.key"])
    bad = defect(ca, KeyPair(secret["tls.crt"], secret["tls.key"]))
    stored = cluster.fake.get("secrets", SECRET, NAMESPACE)
    stored["data"] |= {"tls.crt": b64(bad.cert_pem), "tls.key": b64(bad.key_pem)}
    cluster.fake.update("secrets", stored)

    pair = await cluster.replica().ensure()

    assert pair.cert_pem != bad.cert_pem
    assert pair.ca_bundle_pem == ca.cert_pem == cluster.secret()["ca.crt"]
    assert issued_by(pair.cert_pem, ca.cert_pem)


async def test_a_secret_without_its_ca_key_is_refused(cluster: Cluster) -> None:
    await start(cluster.replica())
    stored = cluster.fake.get("secrets", SECRET, NAMESPACE)
    del stored["data"]["ca.key"]
    cluster.fake.update("secrets", stored)
    with pytest.raises(ProvisionError) as raised:
        await cluster.replica().ensure()
    assert str(raised.value) == (
        "Secret kube-rdma/kube-rdma-webhook-tls has no ca.key, so its certificates cannot be "
        "renewed; delete it to have kube-rdma issue a new CA"
    )


# --- CA rotation -------------------------------------------------------------------------------


async def test_ca_rotation_keeps_the_old_ca_trusted_until_every_replica_moved(
    cluster: Cluster,
) -> None:
    lifetimes = {"ca_lifetime": dt.timedelta(days=90), "serving_lifetime": dt.timedelta(days=30)}
    # Trust is judged by real TLS handshakes, which check validity against the real time: the
    # story starts 62 days ago, so that every certificate it issues is valid today.
    cluster.clock.at = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=62)
    replica = cluster.replica(**lifetimes)
    await start(replica)
    old_ca = cluster.secret()["ca.crt"]
    cluster.clock.advance(days=58)  # the serving certificate is renewed; the CA has 32 days left
    await start(replica)
    serving, serving_key = cluster.secret()["tls.crt"], cluster.secret()["tls.key"]
    assert cluster.secret()["ca.crt"] == old_ca

    # The CA has 29 of 90 days left: a new CA joins; the serving certificate stays.
    cluster.clock.advance(days=3)
    introducing = await replica.ensure()
    secret = cluster.secret()
    new_ca = secret["ca.crt"]
    assert sorted(secret) == ["ca-previous.crt", *FOUR_KEYS]
    assert (secret["ca-previous.crt"], secret["tls.crt"]) == (old_ca, serving)
    assert introducing.cert_pem == serving
    assert introducing.ca_bundle_pem == new_ca + old_ca
    assert trusted_by_apiserver(cluster, introducing.cert_pem, introducing.key_pem)

    # Until the configuration trusts the new CA, the serving certificate does not move.
    seen = len(cluster.fake.requests)
    assert await replica.ensure() == introducing
    assert cluster.writes(seen) == []
    assert await replica.sync_ca_bundle(introducing.ca_bundle_pem)
    assert cluster.bundles() == [new_ca + old_ca] * 2

    # Now the serving certificate comes from the new CA; the old one stays in the bundle.
    switched = await start(replica)
    secret = cluster.secret()
    assert sorted(secret) == ["ca-previous.crt", *FOUR_KEYS]
    assert switched.cert_pem == secret["tls.crt"] != serving
    assert issued_by(switched.cert_pem, new_ca)
    assert switched.ca_bundle_pem == new_ca + old_ca
    assert trusted_by_apiserver(cluster, switched.cert_pem, switched.key_pem)
    assert trusted_by_apiserver(cluster, serving, serving_key)  # replicas not yet reloaded

    # Less than a check interval later, a replica may still serve the old certificate.
    cluster.clock.advance(seconds=59)
    seen = len(cluster.fake.requests)
    assert await start(replica) == switched
    assert cluster.writes(seen) == []

    # A full check interval after the switch, the old CA leaves the Secret and the bundle.
    cluster.clock.advance(seconds=1)
    done = await start(replica)
    assert sorted(cluster.secret()) == FOUR_KEYS
    assert done == replace(switched, ca_bundle_pem=new_ca)
    assert cluster.bundles() == [new_ca, new_ca]
    assert trusted_by_apiserver(cluster, done.cert_pem, done.key_pem)
    assert not trusted_by_apiserver(cluster, serving, serving_key)


# --- the webhook configuration -----------------------------------------------------------------


async def test_a_missing_webhook_configuration_is_an_error_that_names_it(
    cluster: Cluster,
) -> None:
    cluster.fake.delete("mutatingwebhookconfigurations", "kube-rdma")
    pair = await cluster.replica().ensure()
    with pytest.raises(ProvisionError) as raised:
        await cluster.replica().sync_ca_bundle(pair.ca_bundle_pem)
    assert str(raised.value) == (
        "MutatingWebhookConfiguration kube-rdma not found: apply "
        "manifests/webhook/mutatingwebhookconfiguration.yaml, or pass the name of yours, so that "
        "its caBundle can be kept current"
    )


async def test_a_concurrent_change_to_the_configuration_is_read_again(cluster: Cluster) -> None:
    pair = await cluster.replica().ensure()
    cluster.fake.fail("PATCH", CONFIG_PATH, 409)
    seen = len(cluster.fake.requests)
    assert await cluster.replica().sync_ca_bundle(pair.ca_bundle_pem)
    assert [r.method for r in cluster.fake.requests[seen:]] == ["GET", "PATCH", "GET", "PATCH"]
    assert cluster.bundles() == [pair.ca_bundle_pem] * 2


# --- failed calls ------------------------------------------------------------------------------


async def first_start(cluster: Cluster) -> object:
    return await start(cluster.replica())


async def renewal(cluster: Cluster) -> object:
    await start(cluster.replica())
    cluster.clock.advance(days=300)
    return await cluster.replica().ensure()


INJECTED = "fake apiserver: injected failure"
SECRETS_PATH = f"/api/v1/namespaces/{NAMESPACE}/secrets"
CONFIGURATION = "MutatingWebhookConfiguration kube-rdma"


@pytest.mark.parametrize(
    ("method", "path", "code", "act", "message"),
    [
        ("GET", SECRET_PATH, 500, first_start, f"read Secret {NAMESPACE}/{SECRET}: InternalError"),
        ("POST", SECRETS_PATH, 400, first_start, f"create Secret {NAMESPACE}/{SECRET}: BadRequest"),
        ("PUT", SECRET_PATH, 422, renewal, f"update Secret {NAMESPACE}/{SECRET}: Invalid"),
        ("GET", CONFIG_PATH, 503, first_start, f"read {CONFIGURATION}: ServiceUnavailable"),
        ("PATCH", CONFIG_PATH, 500, first_start, f"patch {CONFIGURATION}: InternalError"),
    ],
    ids=["read secret", "create secret", "update secret", "read configuration", "patch it"],
)
async def test_a_failed_call_is_a_provision_error_that_names_it(
    cluster: Cluster,
    method: str,
    path: str,
    code: int,
    act: Callable[[Cluster], Awaitable[object]],
    message: str,
) -> None:
    cluster.fake.fail(method, path, code)
    with pytest.raises(ProvisionError) as raised:
        await act(cluster)
    assert str(raised.value) == f"{message}: {INJECTED}"


async def test_an_unreachable_apiserver_is_a_provision_error() -> None:
    with refusing_port() as port:
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{port}"
        async with client.ApiClient(configuration) as api:
            replica = Cluster(FakeApiServer(), api).replica()
            with pytest.raises(ProvisionError) as raised:
                await replica.ensure()
        assert str(raised.value) == (
            f"read Secret {NAMESPACE}/{SECRET}: Unreachable: Cannot connect to host "
            f"127.0.0.1:{port} ssl:default [Connect call failed ('127.0.0.1', {port})] "
            "(check the apiserver address and the network path to it)"
        )


# --- the loop ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def running(
    replica: Provisioner,
    on_pair: Callable[[ServingPair], None],
    current: ServingPair | None = None,
) -> AsyncIterator[None]:
    """`replica.run()` in a task, cancelled at the end, as the webhook's cleanup does."""
    task = asyncio.create_task(replica.run(on_pair, current))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert task.cancelled()


def recording_sleep(delays: list[float]) -> Callable[[float], Awaitable[None]]:
    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0.001)

    return sleep


async def test_run_retries_with_backoff_and_hands_over_each_new_pair(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = cluster.fake.get("mutatingwebhookconfigurations", "kube-rdma")
    cluster.fake.delete("mutatingwebhookconfigurations", "kube-rdma")
    delays: list[float] = []
    pairs: list[ServingPair] = []
    settings = cluster.settings()
    replica = Provisioner(
        client.CoreV1Api(cluster.api),
        client.AdmissionregistrationV1Api(cluster.api),
        settings,
        sleep=recording_sleep(delays),
    )

    async with running(replica, pairs.append):
        await eventually(lambda: len(delays) >= 4)
        assert delays[:4] == [1.0, 2.0, 4.0, 8.0]
        assert pairs == []
        del manifest["metadata"]["resourceVersion"]
        cluster.fake.create("mutatingwebhookconfigurations", manifest)
        await eventually(lambda: pairs)
        await eventually(lambda: delays[-3:] == [60.0] * 3)

    assert pairs == [await replica.ensure()]
    assert cluster.bundles() == [pairs[0].ca_bundle_pem] * 2
    failures = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert failures[0] == (
        "TLS provisioning failed: MutatingWebhookConfiguration kube-rdma not found: apply "
        "manifests/webhook/mutatingwebhookconfiguration.yaml, or pass the name of yours, so "
        "that its caBundle can be kept current; retrying in 1s"
    )


async def test_run_does_not_hand_over_the_pair_already_served(cluster: Cluster) -> None:
    current = await start(cluster.replica())
    delays: list[float] = []
    pairs: list[ServingPair] = []
    replica = Provisioner(
        client.CoreV1Api(cluster.api),
        client.AdmissionregistrationV1Api(cluster.api),
        cluster.settings(),
        sleep=recording_sleep(delays),
    )
    async with running(replica, pairs.append, current):
        await eventually(lambda: len(delays) >= 2)
        assert pairs == []
        cluster.clock.advance(days=300)
        await eventually(lambda: pairs)
    assert pairs == [await replica.ensure()]
