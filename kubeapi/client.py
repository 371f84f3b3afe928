"""A `kubernetes.client.ApiClient` as gpudra uses it: made from a kubeconfig or the pod's service account, and set
to one attempt per call so that a call's timeout bounds it; and the API's timestamps read."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["api_client", "one_attempt_per_call", "parse_timestamp"]


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


def one_attempt_per_call(api_client: Any) -> None:
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
