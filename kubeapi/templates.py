"""ResourceClaimTemplates on the API server: the webhook's side effects (create the template a decision needs,
AlreadyExists with the same spec is success, a different spec under the same hash-derived name is an error; read
Namespaces and claims), and the store `gpudra gc` lists and deletes through. Every call is bounded by a timeout."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol, cast

from .client import one_attempt_per_call, parse_timestamp
from .errors import ApiServerError, api_errors, status_of
from .paging import PAGE, all_pages

__all__ = [
    "GROUP",
    "LAST_USED_ANNOTATION",
    "LAST_USED_RESOLUTION",
    "PLURAL",
    "SPEC_DIGEST_ANNOTATION",
    "VERSION",
    "KubeSideEffects",
    "KubeTemplateStore",
    "TemplateResult",
    "TemplateWriter",
    "spec_digest",
]

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaimtemplates"
SPEC_DIGEST_ANNOTATION = "gpudra.io/spec-digest"
# When the webhook last handed this template to a pod (RFC 3339, UTC); template garbage collection reads it.
LAST_USED_ANNOTATION = "gpudra.io/last-used"
LAST_USED_RESOLUTION = 60.0  # seconds: reusing a template stamps it at most this often


def spec_digest(template: dict[str, Any]) -> str:
    """SHA-256 of the template's spec as gpudra built it (canonical JSON)."""
    canonical = json.dumps(template.get("spec"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class TemplateResult:
    name: str
    namespace: str
    created: bool  # False: an identical template already existed


class TemplateWriter(Protocol):
    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult: ...

    def get_namespace(self, name: str) -> dict[str, Any] | None: ...

    def reachable(self) -> tuple[bool, str]: ...


class KubeSideEffects:
    """`TemplateWriter` over a `kubernetes.client.ApiClient`; every call bounded by `timeout` seconds (one attempt:
    the client is set not to retry, see `one_attempt_per_call`)."""

    def __init__(self, api_client: Any, *, timeout: float = 2.0) -> None:
        from kubernetes import client  # imported here: only the webhook side needs the client library

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._version = client.VersionApi(api_client)
        self.timeout = timeout
        one_attempt_per_call(api_client)

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
        except api_errors() as exc:
            if status_of(exc) != 409:
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
        except api_errors() as exc:
            if status_of(exc) == 404:
                return False
            raise ApiServerError(self._explain("mark ResourceClaimTemplate used", namespace, name, exc)) from exc
        return True

    def _get(self, plural: str, namespace: str, name: str, what: str) -> dict[str, Any] | None:
        """One resource.k8s.io/v1 object, or None when it does not exist."""
        try:
            found = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name, _request_timeout=self._timeout()
            )
        except api_errors() as exc:
            if status_of(exc) == 404:
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
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            raise ApiServerError(self._explain("read Namespace", "", name, exc)) from exc
        result: dict[str, Any] = self._core.api_client.sanitize_for_serialization(ns)
        return result

    def reachable(self) -> tuple[bool, str]:
        try:
            info = self._version.get_code(_request_timeout=self._timeout())
        except api_errors() as exc:
            return False, f"API server not reachable: {type(exc).__name__}: {exc}"
        return True, f"API server {getattr(info, 'git_version', '?')}"

    def _explain(self, what: str, namespace: str, name: str, exc: Exception) -> str:
        target = f"{namespace}/{name}" if namespace else name
        status = status_of(exc)
        if status is not None:
            reason = getattr(exc, "reason", "") or ""
            return f"could not {what} {target}: API server answered {status} {reason}".strip()
        return f"could not {what} {target} within {self.timeout:g}s: {type(exc).__name__}: {exc}"


class KubeTemplateStore:
    """`webhook.template_gc.TemplateStore` over a `kubernetes.client.ApiClient` (paged lists, bounded calls)."""

    PAGE = PAGE

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._client = client
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def list_templates(self, label_selector: str) -> list[dict[str, Any]]:
        def page(token: str | None) -> Any:
            return self._custom.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, label_selector=label_selector, limit=self.PAGE,
                _continue=token, _request_timeout=self.timeout,
            )  # fmt: skip

        try:
            items, _ = all_pages(page)
        except api_errors() as exc:
            raise ApiServerError(f"could not list ResourceClaimTemplates: {type(exc).__name__}: {exc}") from exc
        return cast(list[dict[str, Any]], items)

    def list_pods(self) -> list[dict[str, Any]]:
        def page(token: str | None) -> Any:
            return self._core.list_pod_for_all_namespaces(
                limit=self.PAGE, _continue=token, _request_timeout=self.timeout
            )

        try:
            pods, _ = all_pages(page)
        except api_errors() as exc:
            raise ApiServerError(f"could not list Pods: {type(exc).__name__}: {exc}") from exc
        items: list[dict[str, Any]] = []
        for pod in pods:
            spec, meta = pod.spec, pod.metadata
            claims = [self._serialize(c) for c in ((spec.resource_claims if spec else None) or [])]
            namespace = meta.namespace if meta else None
            items.append({"metadata": {"namespace": namespace}, "spec": {"resourceClaims": claims}})
        return items

    def delete_template(self, namespace: str, name: str, resource_version: str) -> bool:
        options = self._client.V1DeleteOptions(
            preconditions=self._client.V1Preconditions(resource_version=resource_version or None)
        )
        try:
            self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body=options, _request_timeout=self.timeout
            )
        except api_errors() as exc:
            if status_of(exc) in (404, 409):  # gone already, or stamped by the webhook since we listed it
                return False
            raise ApiServerError(f"could not delete ResourceClaimTemplate {namespace}/{name}: {exc}") from exc
        return True
