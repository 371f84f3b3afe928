"""TLS for the webhook: a development CA and serving certificate, and a server context that reloads its files.

Certificates come from `gpudra certs` (development), a mounted Secret, cert-manager or OpenShift's service-ca. The
`ReloadingCertificate` keeps one `ssl.SSLContext` for the server and loads a new chain into it when the files change
(including Kubernetes' `..data` symlink swap), so new handshakes get the new certificate and connections in flight
are untouched. A certificate already expired is never loaded, and every failed or recovered reload is logged.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import logging
import os
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dra.errors import GpudraError

__all__ = [
    "CertificateError",
    "DevCertificates",
    "ReloadingCertificate",
    "generate_dev_certificates",
    "issue_certificate",
    "new_ca",
    "service_dns_names",
    "write_dev_certificates",
]

log = logging.getLogger("gpudra.webhook.tls")

# TLS 1.2: forward-secret AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305), as the Mozilla "intermediate"
# profile and the kube-apiserver's default secure list have it; OpenSSL's default also offers CBC-SHA suites.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL:!MD5:!DSS"


class CertificateError(GpudraError):
    """A certificate or key that cannot be read, does not match, or is not valid now."""


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use to reach a Service-backed webhook."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


@dataclass(frozen=True)
class DevCertificates:
    ca_cert_pem: bytes
    ca_key_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @property
    def ca_bundle(self) -> str:
        """The base64 `caBundle` for webhook configurations."""
        return base64.b64encode(self.ca_cert_pem).decode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    pkcs8 = serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption())


def _subject(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization is not None:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )


def new_ca(common_name: str, *, validity: dt.timedelta) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed ECDSA P-256 CA that issues leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _subject(common_name)
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def issue_certificate(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    common_name: str,
    *,
    validity: dt.timedelta,
    server: bool = True,
    sans: list[x509.GeneralName] | None = None,
    organization: str | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A leaf certificate signed by `ca`: serving (`server=True`) or client authentication; ECDSA P-256."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_subject(common_name, organization))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def generate_dev_certificates(
    dns_names: list[str], *, ip_addresses: list[str] | None = None, days: int = 365
) -> DevCertificates:
    """A fresh CA and a serving certificate for `dns_names` (and IPs), signed by it; ECDSA P-256."""
    if days <= 0:
        raise CertificateError(f"'days' must be positive (got {days})")
    if not dns_names and not ip_addresses:
        raise CertificateError("a serving certificate needs at least one DNS name or IP address")
    validity = dt.timedelta(days=days)
    ca_cert, ca_key = new_ca("gpudra development CA", validity=validity)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses or []]
    common = dns_names[0] if dns_names else (ip_addresses or [""])[0]
    cert, key = issue_certificate((ca_cert, ca_key), common, validity=validity, sans=sans)
    return DevCertificates(
        ca_cert_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key_pem=_key_pem(ca_key),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=_key_pem(key),
    )


def write_dev_certificates(
    out_dir: Path, dns_names: list[str], *, ip_addresses: list[str] | None = None, days: int = 365
) -> DevCertificates:
    """Write `ca.crt`, `ca.key`, `tls.crt`, `tls.key` (keys mode 0600) and return what was written."""
    certs = generate_dev_certificates(dns_names, ip_addresses=ip_addresses, days=days)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data, mode in (
        ("ca.crt", certs.ca_cert_pem, 0o644),
        ("ca.key", certs.ca_key_pem, 0o600),
        ("tls.crt", certs.cert_pem, 0o644),
        ("tls.key", certs.key_pem, 0o600),
    ):
        _write_atomically(out_dir / name, data, mode)
    return certs


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` through a fresh temporary file created with `mode`, so a key is never readable by
    others (not even between create and chmod) and a watching server never reads half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # a leftover of a killed run; O_EXCL below refuses to reuse any file
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have cleared bits of `mode`; never adds any
        with os.fdopen(fd, "wb") as out:
            fd = -1
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise


class ReloadingCertificate:
    """A server SSLContext whose certificate follows `cert_file`/`key_file` as they change on disk.

    Each good pair is loaded into a fresh context; the server's context (`self.context`, handed to uvicorn) picks
    the newest one per handshake through its SNI callback, which OpenSSL calls for every ClientHello. Swapping a
    reference is atomic, so a handshake never sees a new certificate with an old key, and a pair that does not
    load (a half-written rotation, a mismatched key) never replaces the one serving.
    """

    def __init__(
        self, cert_file: Path, key_file: Path, *, configure: Callable[[ssl.SSLContext], None] | None = None
    ) -> None:
        self._configure = configure  # applied to every context loaded (client-certificate checks: client_auth)
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self._lock = threading.Lock()
        self._digest = ""
        self.not_after: dt.datetime | None = None
        self.reloads = 0
        self.last_error: str | None = None
        self._active = self._load_context()[0]
        self.context = self._load_context()[0]  # also serves clients for which the callback does nothing
        self.context.sni_callback = self._select

    @staticmethod
    def _fresh_context() -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(TLS12_CIPHERS)  # TLS 1.3 suites are all AEAD and not affected by this list
        return ctx

    def _select(self, conn: ssl.SSLSocket | ssl.SSLObject, server_name: str | None, base: ssl.SSLContext) -> None:
        active = self._active
        if active is not base:
            conn.context = active

    def _read(self) -> tuple[bytes, bytes]:
        try:
            return self.cert_file.read_bytes(), self.key_file.read_bytes()
        except OSError as exc:
            raise CertificateError(f"cannot read certificate files: {exc}") from exc

    @staticmethod
    def _digest_of(cert_pem: bytes, key_pem: bytes) -> str:
        return hashlib.sha256(cert_pem + b"\0" + key_pem).hexdigest()

    def _load_context(self) -> tuple[ssl.SSLContext, str]:
        cert_pem, key_pem = self._read()
        digest = self._digest_of(cert_pem, key_pem)
        try:
            cert = x509.load_pem_x509_certificate(cert_pem)
        except ValueError as exc:
            raise CertificateError(f"{self.cert_file}: not a PEM certificate ({exc})") from exc
        if cert.not_valid_after_utc <= dt.datetime.now(dt.UTC):
            # The API server would refuse it at every handshake: keep serving the one we have, or do not start.
            raise CertificateError(
                f"{self.cert_file}: certificate expired at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
            )
        ctx = self._fresh_context()
        if self._configure is not None:
            self._configure(ctx)
        try:
            ctx.load_cert_chain(str(self.cert_file.resolve()), str(self.key_file.resolve()))
        except (ssl.SSLError, OSError) as exc:
            pair = f"{self.cert_file}/{self.key_file}"
            raise CertificateError(f"{pair}: certificate and key do not load: {exc}") from exc
        if self._digest_of(*self._read()) != digest:
            raise CertificateError(f"{self.cert_file}: changed while it was being loaded; trying again next time")
        self._digest = digest
        self.not_after = cert.not_valid_after_utc
        return ctx, digest

    def _load(self) -> bool:
        cert_pem, key_pem = self._read()
        if self._digest_of(cert_pem, key_pem) == self._digest:
            return False
        with self._lock:
            self._active = self._load_context()[0]
        return True

    def reload_if_changed(self) -> bool:
        """Load the files again if their content changed; a broken new pair keeps the old one serving. The last
        error stays until the files load again or are back to the pair serving, and is logged once per change."""
        try:
            changed = self._load()
        except CertificateError as exc:
            if str(exc) != self.last_error:
                log.error("serving certificate not reloaded, the previous one keeps serving: %s", exc)
            self.last_error = str(exc)
            return False
        if changed:
            self.reloads += 1
            log.info("serving certificate reloaded from %s, valid until %s", self.cert_file, self.not_after)
        elif self.last_error is not None:
            log.info("serving certificate files at %s are readable again and unchanged", self.cert_file)
        self.last_error = None
        return changed

    def valid_now(self) -> bool:
        return self.not_after is not None and self.not_after > dt.datetime.now(dt.UTC)
