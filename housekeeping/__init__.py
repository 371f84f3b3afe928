"""gpudra's housekeeping: the jobs a CronJob runs beside the admission server, never on the admission path.

`collect` deletes the ResourceClaimTemplates gpudra created that no pod names any more (`gpudra gc`); `sync_quotas`
keeps the ResourceQuota that makes a namespace's `gpudra.io/max-gpus` label a total the API server enforces
(`gpudra quota`); `check_install` says which of gpudra's protections a cluster has (`gpudra doctor`). All reach the
API server through the kube adapter.
"""

from __future__ import annotations

from .doctor import InstallReader, Protection, check_install
from .namespace_quota import (
    LEGACY_GPU_RESOURCE,
    MAX_GPUS_LABEL,
    QUOTA_NAME,
    DeviceClassLister,
    QuotaReport,
    QuotaStore,
    desired_quota,
    sync_quotas,
)
from .template_gc import (
    MANAGED_SELECTOR,
    MIN_IDLE_FLOOR,
    GcReport,
    TemplateStore,
    check_min_idle,
    collect,
    run_forever,
    unused_templates,
)

__all__ = [
    "LEGACY_GPU_RESOURCE",
    "MANAGED_SELECTOR",
    "MAX_GPUS_LABEL",
    "MIN_IDLE_FLOOR",
    "QUOTA_NAME",
    "DeviceClassLister",
    "GcReport",
    "InstallReader",
    "Protection",
    "QuotaReport",
    "QuotaStore",
    "TemplateStore",
    "check_install",
    "check_min_idle",
    "collect",
    "desired_quota",
    "run_forever",
    "sync_quotas",
    "unused_templates",
]
