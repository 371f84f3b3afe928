"""Certificates for development and tests: a CA, serving and client certificates signed by it, written atomically.

`gpudra certs` writes a development CA and the webhook's serving certificate; the simulator's verification and the
test control plane issue the API server's client certificates from here. Plain `cryptography`, no server: the
webhook's reloading server context lives in webhook.tls.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
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
    "generate_dev_certificates",
    "issue_certificate",
    "new_ca",
    "service_dns_names",
    "write_dev_certificates",
]


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
