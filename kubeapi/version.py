"""The API server's version (`/version`), read once with a bounded call, so that the webhook warns about claim
features the cluster's Kubernetes version does not serve (policyengine.k8s_features)."""

from __future__ import annotations

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

    try:
        info = client.VersionApi(api_client).get_code(_request_timeout=(timeout, timeout))
    except api_errors() as exc:
        log.warning("could not read the API server's version (no version warnings): %s: %s", type(exc).__name__, exc)
        return None
    # `minor` may carry a `+` (GKE, EKS: "37+"); gitVersion is v1.37.2[-suffix].
    for text in (getattr(info, "minor", None), getattr(info, "git_version", None)):
        if isinstance(text, str):
            match = re.fullmatch(r"(\d+)\+?", text) or re.match(r"v?1\.(\d+)", text)
            if match:
                return int(match.group(1))
    log.warning("the API server's version says no minor (%r): no version warnings", info)
    return None
