"""A thin JSON REST client for the test control plane, plus Node/pod helpers and polling.

Objects stay plain dicts (no generated models), so fields newer than the Python client survive round trips.
"""

from __future__ import annotations

import builtins
import json
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import kubernetes.client
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")

# Where each kind lives: (API path prefix, plural, namespaced).
KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Event": ("/api/v1", "events", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "ResourceQuota": ("/api/v1", "resourcequotas", True),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "MutatingAdmissionPolicy": ("/apis/admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", False),
    "MutatingAdmissionPolicyBinding": (
        "/apis/admissionregistration.k8s.io/v1",
        "mutatingadmissionpolicybindings",
        False,
    ),
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        False,
    ),
}


class Kube:
    """JSON REST over a `kubernetes.client.ApiClient`; raises `ApiException` on HTTP errors."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.api_client = api_client

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One API call; `body` is JSON-encoded here. Returns the decoded response (None when empty)."""
        pool = self.api_client.rest_client.pool_manager
        response = pool.request(
            method,
            self.api_client.configuration.host + path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": content_type, "Accept": "application/json"},
            timeout=60.0,
        )
        if not 200 <= response.status < 300:
            text = response.data.decode(errors="replace")
            raise ApiException(status=response.status, reason=f"{method} {path}: {response.reason}: {text}", body=text)
        return json.loads(response.data) if response.data else None

    @staticmethod
    def path(kind: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        prefix, plural, namespaced = KINDS[kind]
        parts = [prefix]
        if namespaced:
            if namespace is None:
                raise ValueError(f"{kind} is namespaced: pass namespace=")
            parts.append(f"namespaces/{namespace}")
        parts.append(plural)
        if name is not None:
            parts.append(name)
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        ns = namespace or obj.get("metadata", {}).get("namespace")
        result: dict[str, Any] = self.request(
            "POST", self.path(obj["kind"], ns if _namespaced(obj["kind"]) else None), obj
        )
        return result

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", self.path(kind, namespace, name))
        return result

    def list(
        self, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        path = self.path(kind, namespace)
        if label_selector:
            path += f"?labelSelector={urllib.parse.quote(label_selector)}"
        items: builtins.list[dict[str, Any]] = self.request("GET", path)["items"]
        return items

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        try:
            self.request("DELETE", self.path(kind, namespace, name))
        except ApiException as e:
            if e.status != 404:
                raise

    def patch(
        self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "PATCH", self.path(kind, namespace, name, subresource), patch, "application/merge-patch+json"
        )
        return result

    def apply(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Creates, or replaces the object if it already exists (no server-side apply needed)."""
        try:
            return self.create(obj, namespace)
        except ApiException as e:
            if e.status != 409:
                raise
        ns = namespace or obj.get("metadata", {}).get("namespace")
        current = self.get(obj["kind"], obj["metadata"]["name"], ns if _namespaced(obj["kind"]) else None)
        replacement = {
            **obj,
            "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        result: dict[str, Any] = self.request(
            "PUT",
            self.path(obj["kind"], ns if _namespaced(obj["kind"]) else None, obj["metadata"]["name"]),
            replacement,
        )
        return result

    # -- helpers ----------------------------------------------------------------------------------------
    def create_node(
        self,
        name: str,
        *,
        cpu: str = "64",
        memory: str = "512Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        extra_allocatable: dict[str, str] | None = None,
        taints: builtins.list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        """A Ready, schedulable Node with capacity = allocatable and exactly `taints`; no kubelet backs it."""
        resources = {"cpu": cpu, "memory": memory, "pods": pods, **(extra_allocatable or {})}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {},
        }
        self.create(node)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake node for gpudra tests",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "nodeInfo": {"kubeletVersion": "v1.37.2", "architecture": "amd64", "operatingSystem": "linux"}
                | {k: "" for k in ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage")}
                | {"containerRuntimeVersion": "fake://1", "kubeProxyVersion": ""},
            }
        }
        self.patch("Node", name, status, subresource="status")
        # The TaintNodesByCondition admission plugin adds node.kubernetes.io/not-ready on create; the node
        # lifecycle controller would lift it once Ready, but it does not run here (no kubelet heartbeats).
        return self.patch("Node", name, {"spec": {"taints": taints or None}})

    def create_namespace(self, prefix: str = "e2e") -> str:
        """A fresh namespace; waits until its `default` ServiceAccount exists (pods need it at admission)."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        wait_for(
            lambda: exists(self, "ServiceAccount", "default", name),
            timeout=30,
            what=f"ServiceAccount {name}/default",
        )
        return name

    def pod_events(self, namespace: str, pod: str) -> builtins.list[str]:
        events = self.request("GET", self.path("Event", namespace) + f"?fieldSelector=involvedObject.name={pod}")
        return [f"{e.get('reason')}: {e.get('message')}" for e in events["items"]]


def _namespaced(kind: str) -> bool:
    return KINDS[kind][2]


def exists(kube: Kube, kind: str, name: str, namespace: str | None = None) -> bool:
    """Whether the object is there (a 404 is False; any other error is raised)."""
    try:
        kube.get(kind, name, namespace)
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def wait_for(
    check: Callable[[], T | None], *, timeout: float = 30.0, interval: float = 0.2, what: str = "condition"
) -> T:
    """Polls `check` until it returns something truthy and returns that; raises TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def pod(
    name: str,
    *,
    limits: dict[str, str] | None = None,
    claims: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A one-container pod; `claims` become pod.spec.resourceClaims and container resources.claims."""
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if claims:
        resources["claims"] = [{"name": c["name"]} for c in claims]
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if claims:
        spec["resourceClaims"] = claims
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
