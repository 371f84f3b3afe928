"""`kubeapi.KubeInstallReader`: one GET per object, the right path for namespaced and cluster-scoped kinds, a 404 as
None and any other failure as an `ApiServerError` naming the object."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from kubeapi import INSTALL_KINDS, ApiServerError, KubeInstallReader


class Custom:
    """What KubeInstallReader calls of CustomObjectsApi, answering from `objects` (path -> object or status)."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.timeouts: list[float] = []

    def _answer(self, path: str, timeout: float) -> Any:
        self.timeouts.append(timeout)
        found = self.objects.get(path, 404)
        if isinstance(found, int):
            raise ApiException(status=found, reason="refused")
        return found

    def get_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str, name: str,
                                     _request_timeout: float) -> Any:  # fmt: skip
        return self._answer(f"{group}/{version}/namespaces/{namespace}/{plural}/{name}", _request_timeout)

    def get_cluster_custom_object(self, group: str, version: str, plural: str, name: str,
                                  _request_timeout: float) -> Any:  # fmt: skip
        return self._answer(f"{group}/{version}/{plural}/{name}", _request_timeout)


def _reader(objects: dict[str, Any]) -> tuple[KubeInstallReader, Custom]:
    reader = KubeInstallReader(ApiClient(Configuration()), timeout=3.0)
    custom = Custom(objects)
    reader._custom = custom  # the one collaborator, replaced
    return reader, custom


def test_namespaced_and_cluster_scoped_objects_are_read_at_their_paths() -> None:
    deployment = {"kind": "Deployment", "metadata": {"name": "gpudra-webhook"}}
    policy = {"kind": "ValidatingAdmissionPolicy", "metadata": {"name": "gpudra-namespace-caps"}}
    reader, custom = _reader({
        "apps/v1/namespaces/gpudra-system/deployments/gpudra-webhook": deployment,
        "admissionregistration.k8s.io/v1/validatingadmissionpolicies/gpudra-namespace-caps": policy,
    })  # fmt: skip
    assert reader.read("Deployment", "gpudra-webhook", "gpudra-system") == deployment
    assert reader.read("ValidatingAdmissionPolicy", "gpudra-namespace-caps") == policy
    assert reader.read("CronJob", "gpudra-namespace-quota", "gpudra-system") is None  # 404: not installed
    assert custom.timeouts == [3.0, 3.0, 3.0]


def test_a_failed_read_names_the_object_and_an_unknown_kind_is_a_bug() -> None:
    reader, _ = _reader({"networking.k8s.io/v1/namespaces/gpudra-system/networkpolicies/gpudra-webhook": 403})
    with pytest.raises(ApiServerError, match="could not read NetworkPolicy gpudra-system/gpudra-webhook"):
        reader.read("NetworkPolicy", "gpudra-webhook", "gpudra-system")
    with pytest.raises(KeyError):
        reader.read("Secret", "gpudra-webhook-tls", "gpudra-system")
    assert "Secret" not in INSTALL_KINDS
