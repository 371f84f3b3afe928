"""The kube adapter: gpudra's calls to the Kubernetes API server through the `kubernetes` client, each bounded by a
timeout, with one idea of what a failed call is (`errors`), one paging loop (`paging`) and one backoff (`backoff`).

- `client`: the ApiClient (kubeconfig or service account, one attempt per call) and API timestamps;
- `templates`: the webhook's side effects (ResourceClaimTemplates, Namespace and claim reads) and gc's store;
- `namespaces`: the admission path's bounded Namespace cache;
- `refresh`: the renewals of what that path remembers (Namespaces, ensured templates), run off it;
- `quotas`: `gpudra quota`'s store;
- `install`: the installed objects `gpudra doctor` reads back;
- `listwatch`: the one list+watch loop of every cache kept by list+watch (a cache says what it does with events);
- `clusterlistwatch`: its source for one resource of an API group, every namespace;
- `deviceclasses`: the DeviceClasses' KEP-5004 extended-resource mapping, kept by a list+watch cache;
- `deviceshapes`: ResourceSlices and DeviceClasses folded into the cluster's device shapes (`dra.shapes`), kept by
  two list+watch loops;
- `version`: the API server's minor version (`/version`);
- `pods`: which live pod-network pods hold an address (the webhook's review-source check).
"""

from __future__ import annotations

from .backoff import Backoff
from .client import api_client, one_attempt_per_call, parse_timestamp
from .clusterlistwatch import ClusterListWatch
from .errors import ApiServerError, ApiServerUnanswered, api_errors, status_of
from .install import INSTALL_KINDS, KubeInstallReader
from .listwatch import (
    ListWatch,
    ListWatchCache,
    ListWatched,
    ListWatchError,
    ListWatchOptions,
    ListWatchSource,
    ListWatchStatus,
    LoopEvent,
)
from .namespaces import NamespaceCache
from .paging import PAGE, all_pages
from .pods import pods_at_address
from .quotas import KubeQuotaStore
from .templates import (
    LAST_USED_ANNOTATION,
    LAST_USED_RESOLUTION,
    SPEC_DIGEST_ANNOTATION,
    KubeSideEffects,
    KubeTemplateStore,
    SharedTemplates,
    TemplateResult,
    TemplateWriter,
    spec_digest,
)

__all__ = [
    "INSTALL_KINDS",
    "LAST_USED_ANNOTATION",
    "LAST_USED_RESOLUTION",
    "PAGE",
    "SPEC_DIGEST_ANNOTATION",
    "ApiServerError",
    "ApiServerUnanswered",
    "Backoff",
    "ClusterListWatch",
    "KubeInstallReader",
    "KubeQuotaStore",
    "KubeSideEffects",
    "KubeTemplateStore",
    "ListWatch",
    "ListWatchCache",
    "ListWatchError",
    "ListWatchOptions",
    "ListWatchSource",
    "ListWatchStatus",
    "ListWatched",
    "LoopEvent",
    "NamespaceCache",
    "SharedTemplates",
    "TemplateResult",
    "TemplateWriter",
    "all_pages",
    "api_client",
    "api_errors",
    "one_attempt_per_call",
    "parse_timestamp",
    "pods_at_address",
    "spec_digest",
    "status_of",
]
