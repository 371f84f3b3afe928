"""Which live pods on the pod network hold an address: the webhook's review-source check (webhook.review_sources)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["pods_at_address"]

# Enough to name the holders; an address is held by one live pod on the pod network.
_LIMIT = 20


def pods_at_address(api_client: Any, address: str, *, timeout: float = 2.0) -> list[tuple[str, str]]:
    """(namespace, name) of each pod whose `status.podIP` is `address`, that is not on the host network (those share
    their node's address) and has not ended (an ended pod's IP may belong to another pod now). Served from the API
    server's watch cache. Raises what the client raises (kubeapi.errors.api_errors) when the call fails."""
    from kubernetes import client

    selector = f"status.podIP={address},spec.hostNetwork=false,status.phase!=Succeeded,status.phase!=Failed"
    response: Any = client.CoreV1Api(api_client).list_pod_for_all_namespaces(
        field_selector=selector, limit=_LIMIT, _preload_content=False, _request_timeout=(timeout, timeout)
    )
    listed = json.loads(response.data)
    pods: list[tuple[str, str]] = []
    for item in listed.get("items") or []:
        metadata = item.get("metadata") or {}
        pods.append((str(metadata.get("namespace", "")), str(metadata.get("name", ""))))
    return pods
