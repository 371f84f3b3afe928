"""TLS for the webhook: a server context that reloads its certificate files (the certificates come from pki).

Certificates come from `gpudra certs` (development), a mounted Secret, cert-manager or OpenShift's service-ca. The
`ReloadingCertificate` keeps one `ssl.SSLContext` for the server and loads a new chain into it when the files change
(including Kubernetes' `..data` symlink swap), so new handshakes get the new certificate and connections in flight
are untouched. A certificate already expired is never loaded, and every failed or recovered reload is logged.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

from cryptography import x509

from pki import CertificateError

__all__ = ["TLS12_CIPHERS", "ReloadingCertificate"]

log = logging.getLogger("gpudra.webhook.tls")

# TLS 1.2: forward-secret AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305), as the Mozilla "intermediate"
# profile and the kube-apiserver's default secure list have it; OpenSSL's default also offers CBC-SHA suites.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL:!MD5:!DSS"


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
