"""ResourceQuotas and Namespaces on the API server, as `gpudra quota` reads and writes them (bounded calls)."""

from __future__ import annotations

from typing import Any

from .errors import ApiServerError, api_errors, status_of

__all__ = ["KubeQuotaStore"]


class KubeQuotaStore:
    """`housekeeping.QuotaStore` over a `kubernetes.client.ApiClient` (plain dicts, bounded calls)."""

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, _request_timeout=self.timeout, **kwargs)
        except api_errors() as exc:
            raise ApiServerError(f"could not {what}: {type(exc).__name__}: {exc}") from exc

    def list_namespaces(self) -> list[dict[str, Any]]:
        found = self._call("list Namespaces", self._core.list_namespace)
        return [self._serialize(item) for item in found.items or []]

    def list_device_classes(self) -> list[dict[str, Any]]:
        """Every DeviceClass (resource.k8s.io/v1), for the classes that map legacy GPU resources (KEP-5004); none
        where the API server does not serve resource.k8s.io/v1."""
        from kubernetes import client

        try:
            found: Any = client.CustomObjectsApi(self._core.api_client).list_cluster_custom_object(
                "resource.k8s.io", "v1", "deviceclasses", _request_timeout=self.timeout
            )
        except api_errors() as exc:
            if status_of(exc) == 404:  # no resource.k8s.io/v1 served: no class maps anything
                return []
            raise ApiServerError(f"could not list DeviceClasses: {type(exc).__name__}: {exc}") from exc
        return [item for item in found.get("items") or [] if isinstance(item, dict)]

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
        except api_errors() as exc:
            if status_of(exc) != 404:
                raise ApiServerError(f"could not delete ResourceQuota {namespace}/{name}: {exc}") from exc
