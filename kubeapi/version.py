"""The API server's version (`/version`), read once with a bounded call, so that the webhook warns about claim
features the cluster's Kubernetes version does not serve (policyengine.k8s_features)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from .errors import api_errors

__all__ = ["server_minor"]

log = logging.getLogger("gpudra.kubeapi.version")


def server_minor(api_client: Any, *, timeout: float = 2.0) -> int | None:
    """The minor version of the API server behind `api_client` (37 for v1.37.2), or None when it cannot be read in
    `timeout` seconds or does not say (then nothing is warned about versions)."""
    from kubernetes import client

    errors: tuple[type[Exception], ...] = (*api_errors(), ValueError)
    try:
        # The raw JSON, not the client's model: a /version missing a field the model requires is still a version.
        response: Any = client.VersionApi(api_client).get_code(
            _preload_content=False, _request_timeout=(timeout, timeout)
        )
        info = json.loads(response.data)
    except errors as exc:
        log.warning("could not read the API server's version (no version warnings): %s: %s", type(exc).__name__, exc)
        return None
    # `minor` may carry a `+` (GKE, EKS: "37+"); gitVersion is v1.37.2[-suffix].
    fields = info if isinstance(info, dict) else {}
    for text in (fields.get("minor"), fields.get("gitVersion")):
        if isinstance(text, str):
            match = re.fullmatch(r"(\d+)\+?", text) or re.match(r"v?1\.(\d+)", text)
            if match:
                minor = int(match.group(1))
                log.info("the API server is Kubernetes 1.%d: claims it does not serve are warned about", minor)
                return minor
    log.warning("the API server's version says no minor (%r): no version warnings", info)
    return None
