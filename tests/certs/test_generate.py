"""Certificates from `kube-rdma certs generate` are what the apiserver and our server need."""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import ipaddress
import os
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs.generate import BACKDATE, KeyType, generate_ca, generate_serving, service_dns_names
from certs.serving import TLSConfigError, TLSPolicy, server_context
from kube_rdma_cli.dispatch import main
from testbed.logstate import preserved_logging


def test_generate_writes_ca_and_serving_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [
        str(tmp_path / n) for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")
    ]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "kube-rdma-webhook",
        "kube-rdma-webhook.kube-rdma",
        "kube-rdma-webhook.kube-rdma.svc",
        "kube-rdma-webhook.kube-rdma.svc.cluster.local",
    ]
    assert sans.get_values_for_type(x509.IPAddress) == []
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    for key in ("ca.key", "tls.key"):
        assert stat.S_IMODE((tmp_path / key).stat().st_mode) == 0o600


def test_localhost_adds_loopback_names(tmp_path: Path) -> None:
    args = ["certs", "generate", "--service", "s", "--namespace", "n", "--out", str(tmp_path)]
    assert main([*args, "--localhost"]) == 0
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName)[-1] == "localhost"
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_server_context_is_tls13_by_default_and_tls12_on_request(cert_dir: Path) -> None:
    ctx = server_context(cert_dir / "tls.crt", cert_dir / "tls.key")
    assert ctx.minimum_version is ssl.TLSVersion.TLSv1_3
    ctx = server_context(cert_dir / "tls.crt", cert_dir / "tls.key", TLSPolicy(min_version="1.2"))
    assert ctx.minimum_version is ssl.TLSVersion.TLSv1_2


def test_mismatched_key_is_rejected(tmp_path: Path, cert_dir: Path) -> None:
    other = tmp_path / "other"
    main(["certs", "generate", "--service", "s", "--namespace", "n", "--out", str(other)])
    with pytest.raises(TLSConfigError, match="and that it belongs to the certificate"):
        server_context(cert_dir / "tls.crt", other / "tls.key")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TLSConfigError, match=r"tls\.crt: file not found"):
        server_context(tmp_path / "tls.crt", tmp_path / "tls.key")


def test_encrypted_key_is_rejected_without_prompting(tmp_path: Path, cert_dir: Path) -> None:
    key = serialization.load_pem_private_key((cert_dir / "tls.key").read_bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    (tmp_path / "tls.key").write_bytes(encrypted)
    with pytest.raises(TLSConfigError, match="that the key is not encrypted"):
        server_context(cert_dir / "tls.crt", tmp_path / "tls.key")


# --- options: key type, lifetimes, extra names ------------------------------------------------

SERVICE_ARGS = ["certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma"]
SERVICE_NAMES = service_dns_names("kube-rdma-webhook", "kube-rdma")
BUNDLE = ["ca.crt", "ca.key", "tls.crt", "tls.key"]


def generate(out: Path, *extra: str) -> int:
    return main([*SERVICE_ARGS, "--out", str(out), *extra])


def load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def contents(directory: Path) -> dict[str, bytes]:
    """Every file in `directory` (temporary files included), by name."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def modes(directory: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in sorted(directory.iterdir())}


# (--key-type, public key class, key size in bits)
KEY_TYPES: list[tuple[str, type[PublicKeyTypes], int]] = [
    ("ecdsa-p256", ec.EllipticCurvePublicKey, 256),
    ("rsa-2048", rsa.RSAPublicKey, 2048),
    ("rsa-4096", rsa.RSAPublicKey, 4096),
]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A bundle from `certs generate --key-type T`, for each key type T."""
    out = {}
    for key_type, _, _ in KEY_TYPES:
        out[key_type] = tmp_path_factory.mktemp(key_type)
        with preserved_logging():  # set up outside any test's own restoring
            assert generate(out[key_type], "--key-type", key_type) == 0
    return out


@pytest.mark.parametrize(
    ("key_type", "key_class", "bits"), KEY_TYPES, ids=[k[0] for k in KEY_TYPES]
)
@pytest.mark.parametrize("file", ["ca", "tls"])
def test_key_type_sets_both_keys(
    bundles: dict[str, Path], file: str, key_type: str, key_class: type[PublicKeyTypes], bits: int
) -> None:
    cert = load_cert(bundles[key_type] / f"{file}.crt")
    key = serialization.load_pem_private_key(
        (bundles[key_type] / f"{file}.key").read_bytes(), password=None
    )
    public = cert.public_key()
    assert isinstance(public, key_class)
    assert isinstance(public, ec.EllipticCurvePublicKey | rsa.RSAPublicKey)
    assert public.key_size == bits
    if isinstance(public, ec.EllipticCurvePublicKey):
        assert public.curve.name == "secp256r1"
    assert key.public_key() == public
    assert cert.signature_hash_algorithm is not None
    assert cert.signature_hash_algorithm.name == "sha256"


@pytest.mark.parametrize("key_type", [k[0] for k in KEY_TYPES])
async def test_each_key_type_serves_tls_verified_against_the_ca(
    bundles: dict[str, Path], key_type: str
) -> None:
    directory = bundles[key_type]
    load_cert(directory / "tls.crt").verify_directly_issued_by(load_cert(directory / "ca.crt"))

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    tls = server_context(directory / "tls.crt", directory / "tls.key")
    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    client = ssl.create_default_context(cafile=str(directory / "ca.crt"))
    async with server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client, server_hostname="kube-rdma-webhook.kube-rdma.svc"
        )
        writer.write(b"review\n")
        assert await reader.readline() == b"review\n"
        tls_object: ssl.SSLObject = writer.get_extra_info("ssl_object")
        assert tls_object.version() in ("TLSv1.2", "TLSv1.3")
        writer.close()
        await writer.wait_closed()


def test_client_refuses_a_name_the_certificate_does_not_cover(bundles: dict[str, Path]) -> None:
    directory = bundles["ecdsa-p256"]
    client = ssl.create_default_context(cafile=str(directory / "ca.crt"))
    tls = server_context(directory / "tls.crt", directory / "tls.key")

    async def handshake() -> None:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=tls)
        async with server:
            port = server.sockets[0].getsockname()[1]
            await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="other")

    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        asyncio.run(handshake())


# (case, extra flags, CA lifetime in days, serving lifetime in days)
LIFETIMES: list[tuple[str, list[str], int, int]] = [
    ("defaults", [], 3650, 365),
    ("both-set", ["--ca-days", "730", "--days", "90"], 730, 90),
    ("serving-as-long-as-ca", ["--ca-days", "30", "--days", "30"], 30, 30),
    ("one-day", ["--ca-days", "2", "--days", "1"], 2, 1),
]


@pytest.mark.parametrize(
    ("flags", "ca_days", "days"), [c[1:] for c in LIFETIMES], ids=[c[0] for c in LIFETIMES]
)
def test_lifetimes_are_exact(tmp_path: Path, flags: list[str], ca_days: int, days: int) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0) - BACKDATE
    assert generate(tmp_path, *flags) == 0
    after = dt.datetime.now(dt.UTC) - BACKDATE
    for name, lifetime in (("ca.crt", ca_days), ("tls.crt", days)):
        cert = load_cert(tmp_path / name)
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(days=lifetime)
        assert before <= cert.not_valid_before_utc <= after


def test_serving_lifetime_is_cut_at_the_cas_expiry() -> None:
    ca = generate_ca("short-lived CA", lifetime=dt.timedelta(days=10))
    serving = generate_serving(ca, ["s"], lifetime=dt.timedelta(days=365))
    expiry = x509.load_pem_x509_certificate(ca.cert_pem).not_valid_after_utc
    assert x509.load_pem_x509_certificate(serving.cert_pem).not_valid_after_utc == expiry


@pytest.mark.parametrize(
    ("ca_type", "serving_type"), [("rsa-2048", "ecdsa-p256"), ("ecdsa-p256", "rsa-2048")]
)
def test_a_ca_of_one_key_type_signs_a_serving_key_of_another(
    ca_type: str, serving_type: str
) -> None:
    ca = generate_ca("CA", key_type=KeyType(ca_type))
    serving = generate_serving(ca, ["s"], key_type=KeyType(serving_type))
    cert = x509.load_pem_x509_certificate(serving.cert_pem)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.cert_pem))


def test_extra_sans_are_told_apart_by_parsing(tmp_path: Path) -> None:
    sans = ["10.1.2.3", "webhook.example.com", "2001:db8::1", "kube-rdma-webhook.kube-rdma.svc"]
    assert generate(tmp_path, "--localhost", *(f"--san={s}" for s in sans)) == 0
    cert = load_cert(tmp_path / "tls.crt")
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    # Service names first; a name given twice is listed once.
    assert names.get_values_for_type(x509.DNSName) == [
        *SERVICE_NAMES,
        "localhost",
        "webhook.example.com",
    ]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address(a) for a in ("127.0.0.1", "10.1.2.3", "2001:db8::1")
    ]


# --- refusing to overwrite, --force, atomic writes ------------------------------------------


def refusal(*paths: Path) -> str:
    return (
        f"kube-rdma certs generate: refusing to overwrite {', '.join(map(str, paths))}; pass "
        "--force to replace them (the new ca.crt must then go into the webhook's caBundle)\n"
    )


def test_existing_bundle_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate(tmp_path) == 0
    capsys.readouterr()
    first = contents(tmp_path)
    assert generate(tmp_path) == 2
    assert capsys.readouterr() == ("", refusal(*(tmp_path / n for n in BUNDLE)))
    assert contents(tmp_path) == first


def test_one_existing_file_blocks_all_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tls.key").write_bytes(b"someone's key")
    (tmp_path / "README").write_bytes(b"not ours")
    assert generate(tmp_path) == 2
    assert capsys.readouterr() == ("", refusal(tmp_path / "tls.key"))
    assert contents(tmp_path) == {"README": b"not ours", "tls.key": b"someone's key"}


def test_force_replaces_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(tmp_path) == 0
    first = contents(tmp_path)
    (tmp_path / "tls.key").chmod(0o644)  # a key left readable by an earlier tool
    assert generate(tmp_path, "--force") == 0
    assert capsys.readouterr().out.split() == [str(tmp_path / n) for n in BUNDLE] * 2
    second = contents(tmp_path)
    assert list(second) == BUNDLE
    assert all(second[n] != first[n] for n in BUNDLE)
    assert modes(tmp_path) == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}
    load_cert(tmp_path / "tls.crt").verify_directly_issued_by(load_cert(tmp_path / "ca.crt"))


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_files_appear_complete_and_with_their_final_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    renamed: dict[str, tuple[int, bytes]] = {}
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        renamed[Path(dst).name] = (stat.S_IMODE(os.stat(src).st_mode), Path(src).read_bytes())
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    old_umask = os.umask(umask)
    try:
        assert generate(tmp_path, "--force") == 0
    finally:
        os.umask(old_umask)
    assert renamed == {
        "ca.crt": (0o644, (tmp_path / "ca.crt").read_bytes()),
        "ca.key": (0o600, (tmp_path / "ca.key").read_bytes()),
        "tls.crt": (0o644, (tmp_path / "tls.crt").read_bytes()),
        "tls.key": (0o600, (tmp_path / "tls.key").read_bytes()),
    }
    assert modes(tmp_path) == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}


def test_failed_write_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate(tmp_path) == 0
    capsys.readouterr()
    first = contents(tmp_path)
    calls = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 3:  # while writing tls.crt
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert generate(tmp_path, "--force") == 1
    assert capsys.readouterr() == (
        "",
        f"kube-rdma certs generate: cannot write to {tmp_path}: No space left on device\n",
    )
    assert contents(tmp_path) == first


# --- bad input ------------------------------------------------------------------------------

# (case, flags, message after "kube-rdma certs generate: ")
BAD_INPUTS: list[tuple[str, list[str], str]] = [
    ("days-zero", ["--days", "0"], "--days must be between 1 and 36500, got 0"),
    ("days-negative", ["--days", "-5"], "--days must be between 1 and 36500, got -5"),
    ("ca-days-zero", ["--ca-days", "0"], "--ca-days must be between 1 and 36500, got 0"),
    (
        "ca-days-too-long",
        ["--ca-days", "36501"],
        "--ca-days must be between 1 and 36500, got 36501",
    ),
    (
        "serving-outlives-default-ca",
        ["--days", "3651"],
        "--days 3651 is longer than --ca-days 3650: the serving certificate cannot outlive its CA",
    ),
    (
        "serving-outlives-ca",
        ["--ca-days", "30", "--days", "31"],
        "--days 31 is longer than --ca-days 30: the serving certificate cannot outlive its CA",
    ),
    (
        "san-underscore",
        ["--san", "my_host"],
        "--san 'my_host' is neither an IP address nor a DNS name",
    ),
    ("san-empty", ["--san="], "--san '' is neither an IP address nor a DNS name"),
    (
        "san-bad-ipv4",
        ["--san", "10.0.0.256"],
        "--san '10.0.0.256' is neither an IP address nor a DNS name",
    ),
    (
        "san-hyphen-ends-label",
        ["--san", "host-.example"],
        "--san 'host-.example' is neither an IP address nor a DNS name",
    ),
    (
        "san-empty-label",
        ["--san", "host..example"],
        "--san 'host..example' is neither an IP address nor a DNS name",
    ),
    (
        "san-label-too-long",
        ["--san", "a" * 64 + ".example"],
        f"--san '{'a' * 64}.example' is neither an IP address nor a DNS name",
    ),
    (
        "san-second-is-bad",
        ["--san", "ok.example", "--san", "*.example"],
        "--san '*.example' is neither an IP address nor a DNS name",
    ),
]


@pytest.mark.parametrize(
    ("flags", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "out"
    assert generate(out, *flags) == 2
    assert capsys.readouterr() == ("", f"kube-rdma certs generate: {message}\n")
    assert not out.exists()


def test_out_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "file"
    out.write_bytes(b"x")
    assert generate(out) == 2
    assert capsys.readouterr() == (
        "",
        f"kube-rdma certs generate: --out {out} is not a directory\n",
    )


# (case, flags, argparse's message after "kube-rdma certs generate: error: ")
UNPARSABLE: list[tuple[str, list[str], str]] = [
    (
        "key-type",
        ["--key-type", "dsa"],
        "argument --key-type: invalid choice: 'dsa' "
        "(choose from 'ecdsa-p256', 'rsa-2048', 'rsa-4096')",
    ),
    ("days", ["--days", "ten"], "argument --days: invalid int value: 'ten'"),
    ("ca-days", ["--ca-days", "1.5"], "argument --ca-days: invalid int value: '1.5'"),
]


@pytest.mark.parametrize(
    ("flags", "message"), [c[1:] for c in UNPARSABLE], ids=[c[0] for c in UNPARSABLE]
)
def test_unparsable_flag_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        generate(tmp_path / "out", *flags)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"kube-rdma certs generate: error: {message}"
    assert not (tmp_path / "out").exists()
