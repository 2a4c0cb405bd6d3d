"""Webhook reviews under faults: a bounded load over TLS while the profiles file is rewritten in
place and the serving certificate rotates, counting every failed request.

Every review opens a new connection, so every one is a fresh TLS handshake against whichever
certificate is current; the profiles file is rewritten (truncated, then written, as an editor
does) between two valid versions, so some reloads read a torn file and must keep the last good
profiles. A request fails when it is not answered 200 with the patch the profile gives.

    python -m bench.webhook_faults [--reviews 20000] [--concurrency 64]

The webhook runs in this process, on the same event loop as the clients: latency figures
include the clients' own CPU time, so they are an upper bound for a webhook on its own core.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web
from cryptography import x509

from certs.generate import KeyPair, generate_ca, generate_serving
from certs.reload import CertificateReloader
from testbed.builders import pods
from webhook.app import Settings, create_app

NAMES = ["localhost", "kube-rdma-webhook.kube-rdma.svc"]
PROFILE_VERSIONS = (
    pods.PROFILES_YAML,
    pods.PROFILES_YAML.replace("extraEnv: {NCCL_DEBUG: WARN}", "extraEnv: {NCCL_DEBUG: INFO}"),
)


@dataclass(frozen=True)
class Outcome:
    reviews: int
    failed: int
    seconds: float
    latencies_ms: list[float]
    rotations: int
    profile_writes: int
    served_serials: int
    """Distinct serving certificates a prober's handshakes were answered with during the run."""

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> str:
        return (
            f"{self.reviews} reviews, {self.failed} failed, {self.reviews / self.seconds:.0f}/s; "
            f"latency ms p50 {self.percentile(0.5):.1f} p99 {self.percentile(0.99):.1f} "
            f"max {max(self.latencies_ms):.1f} mean {statistics.fmean(self.latencies_ms):.1f}; "
            f"{self.rotations} certificate rotations ({self.served_serials} certificates "
            f"served), {self.profile_writes} profile rewrites"
        )


def review_body() -> bytes:
    pod = pods.pytorchjob("worker", 3, "team-a", {"kube-rdma.io/profile": "hostnet"})
    request = pods.request(pod)
    return orjson.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    )


def write_pair(directory: Path, pair: KeyPair) -> None:
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(pair.key_pem)


@asynccontextmanager
async def webhook(directory: Path) -> AsyncIterator[tuple[CertificateReloader, Path, int]]:
    """The webhook over TLS, reloading its profiles every 50 ms; the reloader, the profiles
    file and the port."""
    profiles = directory / "profiles.yaml"
    profiles.write_text(PROFILE_VERSIONS[0])
    reloader = CertificateReloader(directory / "tls.crt", directory / "tls.key", NAMES[1:])
    app = create_app(Settings(profiles_file=profiles, reload_interval=0.05), tls=reloader)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=reloader.context).start()
    try:
        yield reloader, profiles, runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def run(reviews: int, concurrency: int, fault_every: float = 0.2) -> Outcome:
    """`reviews` reviews from `concurrency` clients, with a certificate rotation and a profile
    rewrite every `fault_every` seconds."""
    with tempfile.TemporaryDirectory(prefix="kube-rdma-faults-") as tmp:
        directory = Path(tmp)
        ca = generate_ca("bench CA")
        (directory / "ca.crt").write_bytes(ca.cert_pem)
        write_pair(directory, generate_serving(ca, NAMES))
        async with webhook(directory) as (reloader, profiles, port):
            client_tls = ssl.create_default_context(cafile=str(directory / "ca.crt"))
            connector = aiohttp.TCPConnector(ssl=client_tls, force_close=True, limit=concurrency)
            async with aiohttp.ClientSession(connector=connector) as session:
                return await _drive(
                    session, port, reviews, concurrency, fault_every, reloader, profiles, ca
                )


async def expected_patches(session: aiohttp.ClientSession, url: str, profiles: Path) -> set[str]:
    """The patch each profile version gives, asked once per version with no fault under way."""
    patches = set()
    for version in PROFILE_VERSIONS:
        await asyncio.to_thread(profiles.write_text, version)
        await asyncio.sleep(0.2)  # four reload intervals
        patches.add(await _patch(session, url))
    if len(patches) != len(PROFILE_VERSIONS):
        raise RuntimeError("the two profile versions gave the same patch: the reload is not seen")
    return patches


async def _patch(session: aiohttp.ClientSession, url: str) -> str:
    async with session.post(url, data=review_body()) as response:
        patch: str = orjson.loads(await response.read())["response"]["patch"]
        return patch


async def served_serial(port: int, client_tls: ssl.SSLContext) -> int:
    """The serial of the certificate a fresh handshake with the webhook is answered with."""
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_tls, server_hostname="localhost"
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    return x509.load_der_x509_certificate(der).serial_number


async def _drive(
    session: aiohttp.ClientSession,
    port: int,
    reviews: int,
    concurrency: int,
    fault_every: float,
    reloader: CertificateReloader,
    profiles: Path,
    ca: KeyPair,
) -> Outcome:
    body, url = review_body(), f"https://localhost:{port}/mutate"
    expected = await expected_patches(session, url, profiles)
    left, latencies, failed = [reviews], [], [0]
    faults = {"rotations": 0, "writes": 0}
    serials: set[int] = set()
    client_tls = ssl.create_default_context(cafile=str(profiles.parent / "ca.crt"))

    async def client() -> None:
        while left[0] > 0:
            left[0] -= 1
            started = time.perf_counter()
            try:
                async with session.post(url, data=body) as response:
                    answer = await response.read()
                patch = orjson.loads(answer)["response"]["patch"]
                ok = response.status == 200 and patch in expected
            except (aiohttp.ClientError, OSError, ValueError, KeyError):
                ok = False
            latencies.append((time.perf_counter() - started) * 1000)
            failed[0] += not ok

    async def probe() -> None:
        """A handshake of its own every few ms: which certificate is served now."""
        while True:
            serials.add(await served_serial(port, client_tls))
            await asyncio.sleep(fault_every / 5)

    async def inject() -> None:
        while True:
            await asyncio.sleep(fault_every)
            write_pair(profiles.parent, await asyncio.to_thread(generate_serving, ca, NAMES))
            faults["rotations"] += reloader.check()
            with profiles.open("w") as f:  # in place: a reload may read it half written
                f.write(PROFILE_VERSIONS[faults["writes"] % 2])
            faults["writes"] += 1

    started = time.perf_counter()
    injector, prober = asyncio.create_task(inject()), asyncio.create_task(probe())
    await asyncio.gather(*(client() for _ in range(concurrency)))
    injector.cancel()
    prober.cancel()
    seconds = time.perf_counter() - started
    return Outcome(
        reviews, failed[0], seconds, latencies, faults["rotations"], faults["writes"], len(serials)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--fault-every", type=float, default=0.2, help="seconds between faults")
    args = parser.parse_args()
    print(asyncio.run(run(args.reviews, args.concurrency, args.fault_every)).summary())


if __name__ == "__main__":
    main()
