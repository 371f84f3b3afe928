"""Certificates for a throwaway control plane on loopback: a CA, the apiserver's serving cert, an admin client cert,
the service-account signing key."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pki import issue_certificate, new_ca

_VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: KeyPair
    serving: KeyPair
    admin: KeyPair
    sa_public: Path
    sa_private: Path


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def generate(directory: Path, service_ip: str = "10.0.0.1") -> Pki:
    """Writes a fresh PKI into `directory` (PEM files) and returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = new_ca("gpudra-test-ca", validity=_VALIDITY)

    def save(stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
        pair = KeyPair(directory / f"{stem}.crt", directory / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, pair.key)
        return pair

    ca = save("ca", ca_cert, ca_key)
    sans: list[x509.GeneralName] = [
        x509.DNSName(name)
        for name in (
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
    ]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", service_ip)]
    ca_pair = (ca_cert, ca_key)
    serving = save("apiserver", *issue_certificate(ca_pair, "kube-apiserver", validity=_VALIDITY, sans=sans))
    admin = save(
        "admin",
        *issue_certificate(ca_pair, "gpudra-admin", validity=_VALIDITY, server=False, organization="system:masters"),
    )

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_private = directory / "sa.key"
    _write_key(sa_key, sa_private)
    sa_public = directory / "sa.pub"
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return Pki(ca=ca, serving=serving, admin=admin, sa_public=sa_public, sa_private=sa_private)
