"""The installed objects `gpudra doctor` reads back (Deployment, NetworkPolicy, CronJob, ValidatingAdmissionPolicy and
its binding), as plain dicts through one bounded GET each."""

from __future__ import annotations

from typing import Any, cast

from .errors import ApiServerError, api_errors, status_of

__all__ = ["INSTALL_KINDS", "KubeInstallReader"]

# kind -> (group, version, plural, namespaced)
INSTALL_KINDS: dict[str, tuple[str, str, str, bool]] = {
    "Deployment": ("apps", "v1", "deployments", True),
    "CronJob": ("batch", "v1", "cronjobs", True),
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles", False),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies", True),
    "ValidatingAdmissionPolicy": ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": (
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        False,
    ),
}


class KubeInstallReader:
    """`housekeeping.InstallReader` over a `kubernetes.client.ApiClient`: one object by kind and name, None when the
    API server has no such object (or does not serve its kind)."""

    def __init__(self, api_client: Any, *, timeout: float = 10.0) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self.timeout = timeout

    def read(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist. Raises KeyError for a kind not in INSTALL_KINDS."""
        group, version, plural, namespaced = INSTALL_KINDS[kind]
        try:
            if namespaced:
                found = self._custom.get_namespaced_custom_object(
                    group, version, namespace or "default", plural, name, _request_timeout=self.timeout
                )
            else:
                found = self._custom.get_cluster_custom_object(
                    group, version, plural, name, _request_timeout=self.timeout
                )
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            where = f"{namespace}/{name}" if namespaced else name
            raise ApiServerError(f"could not read {kind} {where}: {type(exc).__name__}: {exc}") from exc
        return cast(dict[str, Any], found)
