"""GPUSizingRecommendation objects: built from a pass's results, created or updated through the status subresource.

One object per owner, named `<kind lower>-<name>` in the owner's namespace, owned by the workload (an
ownerReference, so it goes when the workload goes), labelled `app.kubernetes.io/managed-by: gpudra`. Writing is
idempotent: spec is written once (targetRef is immutable), status is replaced by a merge patch on `/status`, and a
condition keeps its `lastTransitionTime` while its status does not change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, cast

from kubeapi import ApiServerError, api_errors, status_of

from .compute import ContainerRecommendation, Owner

__all__ = ["GROUP", "KIND", "PLURAL", "VERSION", "RecommendationStore", "condition", "recommendation_object"]

GROUP, VERSION, PLURAL, KIND = "gpudra.io", "v1alpha1", "gpusizingrecommendations", "GPUSizingRecommendation"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpudra"}


def rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, ok: bool, reason: str, message: str, now: dt.datetime) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message[:32768],
        "lastTransitionTime": rfc3339(now),
    }


def recommendation_object(
    owner: Owner,
    containers: Sequence[ContainerRecommendation],
    conditions: Sequence[Mapping[str, Any]],
    now: dt.datetime,
) -> dict[str, Any]:
    """The whole object as the recommender means it (what `--dry-run` prints)."""
    metadata: dict[str, Any] = {"name": owner.object_name, "namespace": owner.namespace, "labels": dict(MANAGED_BY)}
    if owner.uid:
        metadata["ownerReferences"] = [
            {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}
        ]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": {"targetRef": {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name}},
        "status": {
            "containers": [c.status_entry() for c in containers],
            "lastUpdated": rfc3339(now),
            "conditions": [dict(c) for c in conditions],
        },
    }


def _keep_transitions(new: list[dict[str, Any]], old: Any) -> list[dict[str, Any]]:
    previous = {c.get("type"): c for c in old or [] if isinstance(c, dict)}
    out = []
    for cond in new:
        before = previous.get(cond["type"])
        if before is not None and before.get("status") == cond["status"] and before.get("lastTransitionTime"):
            cond = {**cond, "lastTransitionTime": before["lastTransitionTime"]}
        out.append(cond)
    return out


class RecommendationStore:
    """Writes GPUSizingRecommendations through a `kubernetes.client.ApiClient`, each call bounded by `timeout`."""

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self.timeout = timeout

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, _request_timeout=self.timeout
            )
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            raise ApiServerError(self._explain("read", namespace, name, exc)) from exc
        return cast(dict[str, Any], found)

    def apply(self, obj: dict[str, Any]) -> str:
        """Create or update one object (as `recommendation_object` builds it): "created", "updated" (the
        containers or a condition changed) or "refreshed" (only lastUpdated moved)."""
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        existing = self.get(namespace, name)
        result = "updated"
        if existing is None:
            body = {k: v for k, v in obj.items() if k != "status"}
            try:
                existing = cast(dict[str, Any], self._custom.create_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, body, _request_timeout=self.timeout
                ))  # fmt: skip
                result = "created"
            except api_errors() as exc:
                if status_of(exc) != 409:  # 409: another pass created it meanwhile; update it below
                    raise ApiServerError(self._explain("create", namespace, name, exc)) from exc
                existing = self.get(namespace, name) or {}
        old_status = existing.get("status") or {}
        status = dict(obj["status"])
        status["conditions"] = _keep_transitions(list(status["conditions"]), old_status.get("conditions"))
        if result == "updated" and old_status.get("containers") == status["containers"]:
            old_conditions = {(c.get("type"), c.get("status")) for c in old_status.get("conditions") or []}
            if old_conditions == {(c["type"], c["status"]) for c in status["conditions"]}:
                result = "refreshed"
        try:
            self._custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, {"status": status},
                _request_timeout=self.timeout, _content_type="application/merge-patch+json",
            )  # fmt: skip
        except api_errors() as exc:
            raise ApiServerError(self._explain("write the status of", namespace, name, exc)) from exc
        return result

    def mark_all(self, namespace: str | None, cond: Mapping[str, Any]) -> int:
        """Set one condition on every gpudra-managed recommendation (in `namespace`, or all); how many changed.
        Used to say PrometheusReachable=False on the objects when a pass could not read Prometheus: the last
        recommendation stays, and whoever reads it sees that it is not being refreshed."""
        selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
        try:
            if namespace:
                listed = self._custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, label_selector=selector, _request_timeout=self.timeout
                )
            else:
                listed = self._custom.list_cluster_custom_object(
                    GROUP, VERSION, PLURAL, label_selector=selector, _request_timeout=self.timeout
                )
        except api_errors() as exc:
            raise ApiServerError(f"could not list {KIND}s: {type(exc).__name__}: {exc}") from exc
        changed = 0
        for item in cast(dict[str, Any], listed).get("items") or []:
            meta = item.get("metadata") or {}
            ns, name = meta["namespace"], meta["name"]
            old = (item.get("status") or {}).get("conditions") or []
            if any(c.get("type") == cond["type"] and c.get("status") == cond["status"] for c in old):
                continue
            conditions = [c for c in old if c.get("type") != cond["type"]] + [dict(cond)]
            try:
                self._custom.patch_namespaced_custom_object_status(
                    GROUP, VERSION, ns, PLURAL, name, {"status": {"conditions": conditions}},
                    _request_timeout=self.timeout, _content_type="application/merge-patch+json",
                )  # fmt: skip
            except api_errors() as exc:
                raise ApiServerError(self._explain("write the status of", ns, name, exc)) from exc
            changed += 1
        return changed

    def _explain(self, what: str, namespace: str, name: str, exc: BaseException) -> str:
        status = status_of(exc)
        detail = f"API server answered {status} {getattr(exc, 'body', '') or ''}".strip() if status else f"{exc}"
        return f"could not {what} {KIND} {namespace}/{name}: {detail}"[:2000]
