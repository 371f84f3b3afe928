"""The webhook's side effects on the API server, through the `kubernetes` client, with bounded timeouts.

Two calls only: create the ResourceClaimTemplate a decision needs (AlreadyExists with the same spec is success, a
different spec under the same hash-derived name is an error), and read Namespace objects for namespace-label
rollout and guardrails (cached briefly, since every GPU pod in a namespace asks for the same object).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol, cast

from dra.errors import GpudraError

__all__ = [
    "SPEC_DIGEST_ANNOTATION",
    "ApiServerError",
    "KubeSideEffects",
    "NamespaceCache",
    "TemplateResult",
    "TemplateWriter",
    "spec_digest",
]

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaimtemplates"
SPEC_DIGEST_ANNOTATION = "gpudra.io/spec-digest"


def spec_digest(template: dict[str, Any]) -> str:
    """SHA-256 of the template's spec as gpudra built it (canonical JSON)."""
    canonical = json.dumps(template.get("spec"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class ApiServerError(GpudraError):
    """The API server could not be reached in time or refused a side effect; the message says which."""


@dataclass(frozen=True)
class TemplateResult:
    name: str
    namespace: str
    created: bool  # False: an identical template already existed


class TemplateWriter(Protocol):
    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult: ...

    def get_namespace(self, name: str) -> dict[str, Any] | None: ...

    def reachable(self) -> tuple[bool, str]: ...


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class KubeSideEffects:
    """`TemplateWriter` over a `kubernetes.client.ApiClient`; every call bounded by `timeout` seconds."""

    def __init__(self, api_client: Any, *, timeout: float = 2.0) -> None:
        from kubernetes import client  # imported here: only the webhook side needs the client library

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._version = client.VersionApi(api_client)
        self.timeout = timeout

    def _timeout(self) -> tuple[float, float]:
        return (self.timeout, self.timeout)

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        name = template["metadata"]["name"]
        digest = spec_digest(template)
        body = dict(template)
        metadata = dict(template["metadata"])
        metadata["namespace"] = namespace
        metadata["annotations"] = {**metadata.get("annotations", {}), SPEC_DIGEST_ANNOTATION: digest}
        body["metadata"] = metadata
        try:
            self._custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, _request_timeout=self._timeout()
            )
            return TemplateResult(name, namespace, created=True)
        except Exception as exc:  # ApiException, urllib3 timeouts and connection errors
            if _status(exc) != 409:
                raise ApiServerError(self._explain("create ResourceClaimTemplate", namespace, name, exc)) from exc
        try:
            existing = cast(
                dict[str, Any],
                self._custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, name, _request_timeout=self._timeout()
                ),
            )
        except Exception as exc:
            raise ApiServerError(self._explain("read ResourceClaimTemplate", namespace, name, exc)) from exc
        # The stored spec carries the API server's defaults, so the digest of what gpudra sent is compared.
        existing_digest = (existing.get("metadata", {}).get("annotations") or {}).get(SPEC_DIGEST_ANNOTATION)
        if existing_digest != digest:
            raise ApiServerError(
                f"ResourceClaimTemplate {namespace}/{name} exists with a different spec; "
                "it was not created by gpudra for this request (rename or delete it)"
            )
        return TemplateResult(name, namespace, created=False)

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        try:
            ns = self._core.read_namespace(name, _request_timeout=self._timeout())
        except Exception as exc:
            if _status(exc) == 404:
                return None
            raise ApiServerError(self._explain("read Namespace", "", name, exc)) from exc
        result: dict[str, Any] = self._core.api_client.sanitize_for_serialization(ns)
        return result

    def reachable(self) -> tuple[bool, str]:
        try:
            info = self._version.get_code(_request_timeout=self._timeout())
        except Exception as exc:
            return False, f"API server not reachable: {type(exc).__name__}: {exc}"
        return True, f"API server {getattr(info, 'git_version', '?')}"

    def _explain(self, what: str, namespace: str, name: str, exc: Exception) -> str:
        target = f"{namespace}/{name}" if namespace else name
        status = _status(exc)
        if status is not None:
            reason = getattr(exc, "reason", "") or ""
            return f"could not {what} {target}: API server answered {status} {reason}".strip()
        return f"could not {what} {target} within {self.timeout:g}s: {type(exc).__name__}: {exc}"


class NamespaceCache:
    """Namespace objects by name for `ttl` seconds; the rollout label of a namespace changes rarely."""

    def __init__(self, writer: TemplateWriter, *, ttl: float = 10.0) -> None:
        self._writer = writer
        self._ttl = ttl
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, dict[str, Any] | None]] = {}

    def get(self, name: str) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(name)
            if hit is not None and now - hit[0] < self._ttl:
                return hit[1]
        value = self._writer.get_namespace(name)
        with self._lock:
            self._entries[name] = (now, value)
        return value
