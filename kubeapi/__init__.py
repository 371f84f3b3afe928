"""The webhook's side effects on the API server, through the `kubernetes` client, with bounded timeouts.

The webhook's two calls: create the ResourceClaimTemplate a decision needs (AlreadyExists with the same spec is
success, a different spec under the same hash-derived name is an error), and read Namespace objects for
namespace-label rollout and guardrails (cached briefly, since every GPU pod in a namespace asks for the same
object); and the stores `gpudra gc` and `gpudra quota` use.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, cast

from dra.errors import GpudraError

__all__ = [
    "LAST_USED_ANNOTATION",
    "SPEC_DIGEST_ANNOTATION",
    "ApiServerError",
    "KubeSideEffects",
    "KubeQuotaStore",
    "KubeTemplateStore",
    "NamespaceCache",
    "TemplateResult",
    "TemplateWriter",
    "api_client",
    "parse_timestamp",
    "spec_digest",
]

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaimtemplates"
SPEC_DIGEST_ANNOTATION = "gpudra.io/spec-digest"
# When the webhook last handed this template to a pod (RFC 3339, UTC); template garbage collection reads it.
LAST_USED_ANNOTATION = "gpudra.io/last-used"
LAST_USED_RESOLUTION = 60.0  # seconds: reusing a template stamps it at most this often


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An RFC 3339 time as Kubernetes writes them (`2026-12-03T10:00:00Z`), timezone-aware (UTC when it names
    none); None when `value` is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def api_client(kubeconfig: str | None = None, *, in_cluster: bool = False) -> Any:
    """A `kubernetes.client.ApiClient` from the pod's service account or a kubeconfig (the default one when None)."""
    from kubernetes import client, config

    if in_cluster:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
        return client.ApiClient()
    return config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]


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


def _one_attempt_per_call(api_client: Any) -> None:
    """Make every request of `api_client` a single attempt, so that `timeout` bounds the whole call.

    urllib3's default (Retry(3)) sends a GET that timed out three more times: against a stalled API server a
    Namespace or claim read bounded by 2 s took 8 s, past the review deadline (4 s), so the review was answered as a
    policy-evaluation timeout instead of naming the API server, and its decision thread stayed busy for the rest.
    A pooled connection that the server closed while idle is still replaced before use (urllib3 checks them)."""
    import urllib3

    pool = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if pool is not None:
        pool.connection_pool_kw["retries"] = urllib3.Retry(total=0, redirect=False)
        pool.clear()  # pools made before this keep their own retries


class KubeSideEffects:
    """`TemplateWriter` over a `kubernetes.client.ApiClient`; every call bounded by `timeout` seconds (one attempt:
    the client is set not to retry, see `_one_attempt_per_call`)."""

    def __init__(self, api_client: Any, *, timeout: float = 2.0) -> None:
        from kubernetes import client  # imported here: only the webhook side needs the client library

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._version = client.VersionApi(api_client)
        self.timeout = timeout
        _one_attempt_per_call(api_client)

    def _timeout(self) -> tuple[float, float]:
        return (self.timeout, self.timeout)

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        for _ in range(3):  # a template collected between our read and our stamp is simply created again
            result = self._ensure_once(namespace, template)
            if result is not None:
                return result
        raise ApiServerError(
            f"ResourceClaimTemplate {namespace}/{template['metadata']['name']} kept disappearing while being reused"
        )

    def _ensure_once(self, namespace: str, template: dict[str, Any]) -> TemplateResult | None:
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
        existing = self._get(PLURAL, namespace, name, "read ResourceClaimTemplate")
        if existing is None:  # collected between our create and our read: create it again
            return None
        # The stored spec carries the API server's defaults, so the digest of what gpudra sent is compared.
        annotations = existing.get("metadata", {}).get("annotations") or {}
        if annotations.get(SPEC_DIGEST_ANNOTATION) != digest:
            raise ApiServerError(
                f"ResourceClaimTemplate {namespace}/{name} exists with a different spec; "
                "it was not created by gpudra for this request (rename or delete it)"
            )
        if not self._stamp_if_stale(namespace, name, annotations.get(LAST_USED_ANNOTATION)):
            return None
        return TemplateResult(name, namespace, created=False)

    def _stamp_if_stale(self, namespace: str, name: str, last_used: Any) -> bool:
        """Mark a reused template as used now (so collection leaves it alone); False when it is gone."""
        now = dt.datetime.now(dt.UTC)
        stamped = parse_timestamp(last_used)
        if stamped is not None and (now - stamped).total_seconds() < LAST_USED_RESOLUTION:
            return True
        patch = {"metadata": {"annotations": {LAST_USED_ANNOTATION: now.strftime("%Y-%m-%dT%H:%M:%SZ")}}}
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, patch, _request_timeout=self._timeout()
            )
        except Exception as exc:
            if _status(exc) == 404:
                return False
            raise ApiServerError(self._explain("mark ResourceClaimTemplate used", namespace, name, exc)) from exc
        return True

    def _get(self, plural: str, namespace: str, name: str, what: str) -> dict[str, Any] | None:
        """One resource.k8s.io/v1 object, or None when it does not exist."""
        try:
            found = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name, _request_timeout=self._timeout()
            )
        except Exception as exc:  # ApiException, urllib3 timeouts and connection errors
            if _status(exc) == 404:
                return None
            raise ApiServerError(self._explain(what, namespace, name, exc)) from exc
        return cast(dict[str, Any], found)

    def read_claim_spec(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        """`webhook.dra_demand.ClaimReader`: a ResourceClaim's spec, or a ResourceClaimTemplate's `spec.spec`."""
        plural = "resourceclaims" if kind == "claim" else PLURAL
        found = self._get(plural, namespace, name, f"read {kind}")
        if found is None:
            return None
        spec = found.get("spec") or {}
        result: dict[str, Any] = spec if kind == "claim" else (spec.get("spec") or {})
        return result

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


class KubeTemplateStore:
    """`webhook.template_gc.TemplateStore` over a `kubernetes.client.ApiClient` (paged lists, bounded calls)."""

    PAGE = 500

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._client = client
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def list_templates(self, label_selector: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = cast(dict[str, Any], self._custom.list_cluster_custom_object(
                    GROUP, VERSION, PLURAL, label_selector=label_selector, limit=self.PAGE,
                    _continue=token, _request_timeout=self.timeout,
                ))  # fmt: skip
            except Exception as exc:
                raise ApiServerError(f"could not list ResourceClaimTemplates: {type(exc).__name__}: {exc}") from exc
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def list_pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = self._core.list_pod_for_all_namespaces(
                    limit=self.PAGE, _continue=token, _request_timeout=self.timeout
                )
            except Exception as exc:
                raise ApiServerError(f"could not list Pods: {type(exc).__name__}: {exc}") from exc
            for pod in page.items or []:
                spec, meta = pod.spec, pod.metadata
                claims = [self._serialize(c) for c in ((spec.resource_claims if spec else None) or [])]
                namespace = meta.namespace if meta else None
                items.append({"metadata": {"namespace": namespace}, "spec": {"resourceClaims": claims}})
            token = page.metadata._continue if page.metadata else None
            if not token:
                return items

    def delete_template(self, namespace: str, name: str, resource_version: str) -> bool:
        options = self._client.V1DeleteOptions(
            preconditions=self._client.V1Preconditions(resource_version=resource_version or None)
        )
        try:
            self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body=options, _request_timeout=self.timeout
            )
        except Exception as exc:
            if _status(exc) in (404, 409):  # gone already, or stamped by the webhook since we listed it
                return False
            raise ApiServerError(f"could not delete ResourceClaimTemplate {namespace}/{name}: {exc}") from exc
        return True


class KubeQuotaStore:
    """`webhook.namespace_quota.QuotaStore` over a `kubernetes.client.ApiClient` (plain dicts, bounded calls)."""

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, _request_timeout=self.timeout, **kwargs)
        except Exception as exc:
            raise ApiServerError(f"could not {what}: {type(exc).__name__}: {exc}") from exc

    def list_namespaces(self) -> list[dict[str, Any]]:
        found = self._call("list Namespaces", self._core.list_namespace)
        return [self._serialize(item) for item in found.items or []]

    def list_quotas(self, name: str) -> list[dict[str, Any]]:
        found = self._call(
            "list ResourceQuotas",
            self._core.list_resource_quota_for_all_namespaces,
            field_selector=f"metadata.name={name}",
        )
        return [self._serialize(item) for item in found.items or []]

    def put_quota(self, quota: dict[str, Any], *, exists: bool) -> None:
        namespace, name = quota["metadata"]["namespace"], quota["metadata"]["name"]
        if exists:
            self._call(f"replace ResourceQuota {namespace}/{name}", self._core.patch_namespaced_resource_quota,
                       name, namespace, {"metadata": quota["metadata"], "spec": quota["spec"]})  # fmt: skip
        else:
            self._call(f"create ResourceQuota {namespace}/{name}", self._core.create_namespaced_resource_quota,
                       namespace, quota)  # fmt: skip

    def delete_quota(self, namespace: str, name: str) -> None:
        try:
            self._core.delete_namespaced_resource_quota(name, namespace, _request_timeout=self.timeout)
        except Exception as exc:
            if _status(exc) != 404:
                raise ApiServerError(f"could not delete ResourceQuota {namespace}/{name}: {exc}") from exc


class NamespaceCache:
    """Namespace objects by name for `ttl` seconds; the rollout label of a namespace changes rarely.

    Bounded by `max_entries` and by `max_bytes` of the objects' JSON text, least recently used out first: a review
    can name any namespace (one that does not exist included), so the cache must not grow with the names sent.
    """

    def __init__(
        self, writer: TemplateWriter, *, ttl: float = 10.0, max_entries: int = 4096, max_bytes: int = 8 * 2**20
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"max_entries and max_bytes must be above 0 (got {max_entries}, {max_bytes})")
        self._writer = writer
        self._ttl = ttl
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, dict[str, Any] | None, int]] = OrderedDict()
        self._bytes = 0

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes) held now."""
        with self._lock:
            return len(self._entries), self._bytes

    def get(self, name: str) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(name)
            if hit is not None and now - hit[0] < self._ttl:
                self._entries.move_to_end(name)
                return hit[1]
        value = self._writer.get_namespace(name)
        weight = len(name) + len(json.dumps(value, separators=(",", ":"), default=str))
        with self._lock:
            old = self._entries.pop(name, None)
            if old is not None:
                self._bytes -= old[2]
            if weight <= self.max_bytes:
                self._entries[name] = (now, value, weight)
                self._bytes += weight
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value
