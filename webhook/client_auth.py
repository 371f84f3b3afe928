"""Who may send reviews: with `gpudra serve --client-ca FILE`, only a client presenting a certificate signed by that
CA (the kube-apiserver, through its AdmissionConfiguration kubeconfig) reaches `/mutate` and `/validate`.

TLS asks every client for a certificate but lets one without through the handshake (CERT_OPTIONAL; one that
presents a certificate the CA did not sign fails it); each connection then remembers whether it had one, and every
path but the kubelet's probes and Prometheus' scrape (`PROBE_PATHS`, GET) is answered 403 without it. A forged
review thus never reaches admission, so it creates and refreshes nothing.
"""

from __future__ import annotations

import json
import ssl

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PROBE_PATHS", "RequireClientCertificate", "require_client_certificates"]

PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
_REFUSAL = json.dumps(
    {"error": "a client certificate signed by the webhook's --client-ca is required for this path"}
).encode()


def require_client_certificates(context: ssl.SSLContext, client_ca: str) -> None:
    """Ask clients of `context` for a certificate signed by the CA in `client_ca` (PEM), without requiring one."""
    context.load_verify_locations(cafile=client_ca)
    context.verify_mode = ssl.CERT_OPTIONAL


class RequireClientCertificate:
    """ASGI wrapper for one connection: without a verified client certificate only `PROBE_PATHS` are served."""

    def __init__(self, app: ASGIApp, *, verified: bool) -> None:
        self.app = app
        self.verified = verified

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.verified or (scope["method"] == "GET" and scope["path"] in PROBE_PATHS):
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_REFUSAL)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": _REFUSAL, "more_body": False})
