"""Development certificates and the reloading server context, over a real TLS handshake."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from pki import CertificateError, generate_dev_certificates, service_dns_names, write_dev_certificates
from webhook.tls import ReloadingCertificate


@contextlib.contextmanager
def _tls_server(reloading: ReloadingCertificate) -> Iterator[int]:
    """A loopback TLS server on `reloading`'s context (each connection: handshake, read a byte); yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            try:
                with reloading.context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_serving_certificate_has_service_names_and_is_signed_by_the_ca(tmp_path: Path) -> None:
    names = service_dns_names("gpudra-webhook", "gpudra-system")
    certs = write_dev_certificates(tmp_path, names, ip_addresses=["127.0.0.1"], days=3)
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == names
    assert "gpudra-webhook.gpudra-system.svc" in names
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    ca = x509.load_pem_x509_certificate(certs.ca_cert_pem)
    cert.verify_directly_issued_by(ca)
    remaining = cert.not_valid_after_utc - dt.datetime.now(dt.UTC)
    assert dt.timedelta(days=2, hours=23) < remaining <= dt.timedelta(days=3)
    assert (tmp_path / "tls.key").stat().st_mode & 0o777 == 0o600
    assert certs.ca_bundle.startswith("LS0t")  # base64 of "-----BEGIN"


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(CertificateError, match="'days' must be positive"):
        generate_dev_certificates(["a"], days=0)
    with pytest.raises(CertificateError, match="at least one DNS name"):
        generate_dev_certificates([])


def _handshake_subject(port: int, ca_pem: bytes) -> str:
    client = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with client.wrap_socket(sock, server_hostname="localhost") as tls:
            cert = tls.getpeercert()
    assert cert is not None
    return str(cert["serialNumber"])


def test_reload_swaps_certificate_for_new_handshakes_and_keeps_old_on_broken_files(tmp_path: Path) -> None:
    first = write_dev_certificates(tmp_path, ["localhost"])
    reloading = ReloadingCertificate(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert reloading.valid_now() and reloading.reloads == 0
    with _tls_server(reloading) as port:
        serial_1 = _handshake_subject(port, first.ca_cert_pem)
        assert reloading.reload_if_changed() is False  # unchanged files: nothing to do
        second = write_dev_certificates(tmp_path, ["localhost"])
        assert reloading.reload_if_changed() is True
        serial_2 = _handshake_subject(port, second.ca_cert_pem)
        assert serial_1 != serial_2 and reloading.reloads == 1
        (tmp_path / "tls.crt").write_text("not a certificate")
        assert reloading.reload_if_changed() is False
        assert reloading.last_error is not None and "not a PEM certificate" in reloading.last_error
        assert _handshake_subject(port, second.ca_cert_pem) == serial_2  # old pair keeps serving


def test_keys_are_created_owner_only_and_exclusively_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[str, int, int]] = []
    real_open = os.open

    def recording_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
        opened.append((os.fspath(path), flags, mode))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", recording_open)
    old_umask = os.umask(0)
    try:
        write_dev_certificates(tmp_path, ["localhost"])
    finally:
        os.umask(old_umask)
    key_opens = [(flags, mode) for path, flags, mode in opened if Path(path).name.startswith((".tls.key", ".ca.key"))]
    assert len(key_opens) == 2
    assert all(flags & os.O_EXCL and flags & os.O_CREAT and mode == 0o600 for flags, mode in key_opens)
    for name, mode in (("tls.key", 0o600), ("ca.key", 0o600), ("tls.crt", 0o644)):
        assert (tmp_path / name).stat().st_mode & 0o777 == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]  # no temp left


def _tls12_handshake(port: int, ca_pem: bytes, ciphers: str) -> str:
    client = ssl.create_default_context(cadata=ca_pem.decode())
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    client.set_ciphers(ciphers)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with client.wrap_socket(sock, server_hostname="localhost") as tls:
            return str(tls.cipher()[0])  # type: ignore[index]


def test_tls12_offers_only_forward_secret_aead_suites(tmp_path: Path) -> None:
    certs = write_dev_certificates(tmp_path, ["localhost"])
    reloading = ReloadingCertificate(tmp_path / "tls.crt", tmp_path / "tls.key")
    with _tls_server(reloading) as port:
        assert "GCM" in _tls12_handshake(port, certs.ca_cert_pem, "ECDHE+AESGCM")
        # Python's default server list offers these two CBC suites for an EC key.
        for cbc in ("ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256"):
            with pytest.raises(ssl.SSLError):
                _tls12_handshake(port, certs.ca_cert_pem, cbc)
