"""Which workload owns a pod, by ownerReferences read from the API server, with every look-up cached for a pass.

The supported kinds are `workloads.OWNER_KINDS` (read by their API resource); the top of a pod's chain among them is
the owner, except that a kind whose controller labels every pod with its workload (`pod_label`) is named by that
label and ends a chain, as the webhook keys recommendations (`workloads.pod_owner`): KubeRay chains stop at the
RayCluster, whose RayService or RayJob a pod cannot name. A pod that is gone (7 days of history outlive rollouts) is
looked for by the controllers' naming (`<replicaset>-<suffix>`, `<statefulset>-<ordinal>`, `<job>-<suffix>`); a
bare pod has no owner to size for.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Protocol, cast

from kubeapi import PAGE, ApiServerError, all_pages, api_errors, status_of
from workloads import KINDS, OWNER_KINDS, kind_named

from .compute import Owner
from .dcgm import invalid_name

__all__ = ["KubeObjects", "ObjectReader", "OwnerResolver", "SUPPORTED_KINDS"]

log = logging.getLogger("gpudra.recommend.owners")

# kind -> (apiVersion used to read it, plural)
SUPPORTED_KINDS: dict[str, tuple[str, str]] = {
    k.kind: (k.resource.api_version, k.resource.plural) for k in OWNER_KINDS if k.resource is not None
}
# The kinds whose controller labels every pod with its workload: the label names the owner (see the docstring).
_LABELLED = tuple((k.kind, k.pod_label) for k in KINDS if k.pod_label and k.kind in SUPPORTED_KINDS)
_MAX_DEPTH = 8


class ObjectReader(Protocol):
    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (or its API is not served)."""
        ...

    def list_pods(self, namespace: str) -> list[dict[str, Any]]: ...


def _checked(namespace: str, name: str | None = None) -> None:
    """Refuse a namespace or object name that Kubernetes could not have made before it goes into a request path."""
    why = invalid_name("namespace", namespace)
    if why is None and name is not None:
        why = invalid_name("pod", name)  # object names of every supported kind are DNS-1123 subdomains
    if why is not None:
        raise ValueError(f"not a Kubernetes name, not requested: {namespace!r}/{(name or '')[:64]!r}: {why}")


class KubeObjects:
    """`ObjectReader` over a `kubernetes.client.ApiClient`: built-in and custom kinds read as plain dicts."""

    PAGE = PAGE

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        api_version, plural = SUPPORTED_KINDS[kind]
        _checked(namespace, name)
        try:
            if kind == "Pod":
                return cast(
                    dict[str, Any],
                    self._serialize(self._core.read_namespaced_pod(name, namespace, _request_timeout=self.timeout)),
                )
            group, version = api_version.split("/")
            found = self._custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, _request_timeout=self.timeout
            )
        except api_errors() as exc:
            if status_of(exc) == 404:  # no such object, or no such API (KubeRay or LWS not installed)
                return None
            raise ApiServerError(f"could not read {kind} {namespace}/{name}: {type(exc).__name__}: {exc}") from exc
        return cast(dict[str, Any], found)

    def list_pods(self, namespace: str) -> list[dict[str, Any]]:
        _checked(namespace)

        def page(token: str | None) -> Any:
            return self._core.list_namespaced_pod(
                namespace, limit=self.PAGE, _continue=token, _request_timeout=self.timeout
            )

        try:
            pods, _ = all_pages(page)
        except api_errors() as exc:
            raise ApiServerError(f"could not list Pods in {namespace}: {type(exc).__name__}: {exc}") from exc
        return [cast(dict[str, Any], self._serialize(p)) for p in pods]


def _controller(obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(kind, name, apiVersion) of the controlling ownerReference; the first one when none says controller."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    refs = [r for r in refs if isinstance(r, Mapping) and r.get("kind") and r.get("name")]
    controllers = [r for r in refs if r.get("controller") is True]
    if len(controllers) > 1:
        meta = obj.get("metadata") or {}
        log.warning(
            "%s/%s names %d controllers; following the first (%s %s)",
            meta.get("namespace"), meta.get("name"), len(controllers), controllers[0]["kind"], controllers[0]["name"],
        )  # fmt: skip
    chosen = controllers[0] if controllers else (refs[0] if refs else None)
    if chosen is None:
        return None
    return str(chosen["kind"]), str(chosen["name"]), str(chosen.get("apiVersion") or "")


def _owner(obj: Mapping[str, Any], kind: str, namespace: str) -> Owner:
    meta = obj.get("metadata") or {}
    api_version = str(obj.get("apiVersion") or SUPPORTED_KINDS[kind][0])
    return Owner(namespace, kind, str(meta.get("name")), api_version, str(meta.get("uid") or ""))


_SUFFIX = re.compile(r"^(?P<base>.+)-(?P<suffix>[a-z0-9]+)$")


class OwnerResolver:
    """Owners of pods by (namespace, pod name); one object read at most once per resolver (make one per pass)."""

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}
        self._objects: dict[tuple[str, str, str], dict[str, Any] | None] = {}
        self._owners: dict[tuple[str, str], Owner | str] = {}
        self.several_controllers = 0

    def pods(self, namespace: str) -> dict[str, dict[str, Any]]:
        """The namespace's live pods by name (one list call per namespace)."""
        if namespace not in self._pods:
            if invalid_name("namespace", namespace):
                return {}
            self._pods[namespace] = {
                str((p.get("metadata") or {}).get("name")): p for p in self._reader.list_pods(namespace)
            }
        return self._pods[namespace]

    def _get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (kind, namespace, name)
        if key not in self._objects:
            valid = (
                kind in SUPPORTED_KINDS and not invalid_name("namespace", namespace) and not invalid_name("pod", name)
            )
            self._objects[key] = self._reader.get(kind, namespace, name) if valid else None
        return self._objects[key]

    def owner_of(self, namespace: str, pod: str) -> Owner | str:
        """The pod's workload owner, or why there is none."""
        key = (namespace, pod)
        if key not in self._owners:
            why = invalid_name("namespace", namespace) or invalid_name("pod", pod)
            self._owners[key] = f"invalid name ({why})" if why else self._resolve(namespace, pod)
        return self._owners[key]

    def _resolve(self, namespace: str, pod_name: str) -> Owner | str:
        pod = self.pods(namespace).get(pod_name)
        if pod is None:
            return self._resolve_gone(namespace, pod_name)
        labels = (pod.get("metadata") or {}).get("labels") or {}
        for kind, label in _LABELLED:
            name = labels.get(label)
            if name:
                found = self._get(kind, namespace, name)
                return (
                    _owner(found, kind, namespace) if found else Owner(namespace, kind, name, SUPPORTED_KINDS[kind][0])
                )
        if _controller(pod) is None:
            return "bare pod (no controller to size for)"
        return self._climb(pod, "Pod", namespace)

    def _climb(self, obj: dict[str, Any], kind: str, namespace: str) -> Owner | str:
        """Follow controller references up from `obj` to the topmost supported kind."""
        best: Owner | None = None if kind == "Pod" else _owner(obj, kind, namespace)
        for _ in range(_MAX_DEPTH):
            ref = _controller(obj)
            if ref is None:
                break
            ref_kind, ref_name, ref_version = ref
            if ref_kind not in SUPPORTED_KINDS:
                break  # an operator we do not know (Argo Rollout, ...): the last known object is the owner
            parent = self._get(ref_kind, namespace, ref_name)
            if parent is None:  # the owner is gone (or its API is not served): what the child names is the key
                if ref_kind != "Pod":
                    best = Owner(namespace, ref_kind, ref_name, ref_version or SUPPORTED_KINDS[ref_kind][0])
                break
            obj, kind = parent, ref_kind
            if kind != "Pod":
                best = _owner(obj, kind, namespace)
            known = kind_named(kind)
            if known is not None and known.pod_label:  # the webhook's key for such pods (see the module docstring)
                break
        if best is None:
            return "no supported owner"
        return best

    def _resolve_gone(self, namespace: str, pod_name: str) -> Owner | str:
        match = _SUFFIX.match(pod_name)
        if match is None:
            return "pod gone, no owner found by name"
        base, suffix = match.group("base"), match.group("suffix")
        guesses = [("ReplicaSet", base), ("Job", base)]
        if suffix.isdigit():
            guesses.insert(0, ("StatefulSet", base))
        for kind, name in guesses:
            obj = self._get(kind, namespace, name)
            if obj is not None:
                return self._climb(obj, kind, namespace)
        return "pod gone, no owner found by name"
