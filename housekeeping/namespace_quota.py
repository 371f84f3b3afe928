"""Namespace GPU caps as Kubernetes ResourceQuotas: the namespace label `gpudra.io/max-gpus` becomes a quota that
the API server enforces on every ResourceClaim and Pod when it is created, whoever creates it.

ResourceQuota counts a claim's devices per DeviceClass (`<class>.deviceclass.resource.k8s.io/devices`, the worst
case of `firstAvailable`, 32 for `allocationMode: All`) and, with DRAExtendedResource, also as
`requests.<extendedResourceName>` of the class, which is what a legacy `nvidia.com/gpu` pod left untranslated is
charged (k8s.io/kubernetes v1.37.2 pkg/quota/v1/evaluator/core/resource_claims.go). So the quota makes the cap a
namespace total, counts a template created after the pod named it (the claim is charged when the resourceclaim
controller creates it) and a claim replaced after admission. Each class is capped separately: a namespace labelled 2
may hold 2 whole GPUs and 2 MIG devices.

Pods gpudra leaves to kube-scheduler (KEP-5004: a DeviceClass maps their legacy resource, and they ask for nothing but
whole devices) are counted the same way: the pod is charged `requests.nvidia.com/gpu` (N) when it is created, and
the claim the scheduler makes for it N devices of its class (its `requests.<resource>` share is the pod's, not
charged twice). Where the cluster maps a legacy GPU resource to another class (an admin-made class for
`nvidia.com/gpu`, one class per MIG profile for `nvidia.com/mig-<profile>`), that class's devices and that resource
are capped too (`desired_quota`'s `extended_resources`, read from the DeviceClasses by `sync_quotas`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from dra.gpus import GPU_DEVICE_CLASSES
from kubeapi.deviceclasses import extended_resource_mapping
from policyengine import extended_resource_pairs
from policyengine.translate import MANAGED_BY

__all__ = [
    "MAX_GPUS_LABEL",
    "DeviceClassLister",
    "QUOTA_NAME",
    "QuotaReport",
    "QuotaStore",
    "desired_quota",
    "sync_quotas",
]

MAX_GPUS_LABEL = "gpudra.io/max-gpus"
QUOTA_NAME = "gpudra-gpu-cap"
# The extended resource the NVIDIA driver's gpu.nvidia.com DeviceClass maps (KEP-5004): untranslated legacy pods.
LEGACY_GPU_RESOURCE = "nvidia.com/gpu"
_WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")


class QuotaStore(Protocol):
    def list_namespaces(self) -> list[dict[str, Any]]: ...

    def list_quotas(self, name: str) -> list[dict[str, Any]]:
        """Every ResourceQuota called `name`, in all namespaces."""
        ...

    def put_quota(self, quota: dict[str, Any], *, exists: bool) -> None: ...

    def delete_quota(self, namespace: str, name: str) -> None: ...


@runtime_checkable
class DeviceClassLister(Protocol):
    def list_device_classes(self) -> list[dict[str, Any]]: ...


@dataclass
class QuotaReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    invalid: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def desired_quota(
    namespace: Mapping[str, Any], extended_resources: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The ResourceQuota the namespace's `gpudra.io/max-gpus` label asks for; None without the label.
    `extended_resources`: the cluster's KEP-5004 mapping (extended resource -> DeviceClass); each legacy GPU
    resource it maps and its class are capped too.

    Raises ValueError naming the label when its value is not a whole number."""
    metadata = namespace.get("metadata") or {}
    value = (metadata.get("labels") or {}).get(MAX_GPUS_LABEL)
    if value is None:
        return None
    if not isinstance(value, str) or not _WHOLE_NUMBER.fullmatch(value):
        raise ValueError(
            f"namespace {metadata.get('name')}: label {MAX_GPUS_LABEL} must be a whole number (got {value!r})"
        )
    mapped = extended_resource_pairs(extended_resources)
    classes = sorted(GPU_DEVICE_CLASSES | {cls for _, cls in mapped})
    hard = {f"{cls}.deviceclass.resource.k8s.io/devices": value for cls in classes}
    for resource in sorted({LEGACY_GPU_RESOURCE} | {resource for resource, _ in mapped}):
        hard[f"requests.{resource}"] = value
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": metadata.get("name"),
            "labels": dict(MANAGED_BY),
            "annotations": {"gpudra.io/from-label": f"{MAX_GPUS_LABEL}={value}"},
        },
        "spec": {"hard": hard},
    }


def _terminating(namespace: Mapping[str, Any]) -> bool:
    metadata, status = namespace.get("metadata") or {}, namespace.get("status") or {}
    return bool(metadata.get("deletionTimestamp")) or status.get("phase") == "Terminating"


def _managed(quota: Mapping[str, Any]) -> bool:
    labels = (quota.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in MANAGED_BY.items())


def sync_quotas(store: QuotaStore, *, dry_run: bool = False) -> QuotaReport:
    """One pass: every namespace with the label gets its quota (created or brought back to the label's value); a
    gpudra quota whose namespace lost the label goes. A quota of that name gpudra did not create is left alone, and
    so is a namespace being deleted (the API server refuses new objects there: one would fail the whole pass).
    A store that lists DeviceClasses (`DeviceClassLister`) adds the classes and resources the cluster maps."""
    report = QuotaReport()
    mapping: dict[str, str] = {}
    if isinstance(store, DeviceClassLister):
        mapping = extended_resource_mapping(store.list_device_classes())
    existing = {(q.get("metadata") or {}).get("namespace"): q for q in store.list_quotas(QUOTA_NAME)}
    for namespace in store.list_namespaces():
        name = str((namespace.get("metadata") or {}).get("name", ""))
        if _terminating(namespace):  # the API server refuses new objects there; its quota goes with it
            report.unchanged += 1
            continue
        try:
            wanted = desired_quota(namespace, mapping)
        except ValueError as exc:
            report.invalid.append(str(exc))
            continue
        current = existing.get(name)
        if current is not None and not _managed(current):
            report.invalid.append(f"namespace {name}: ResourceQuota {QUOTA_NAME} exists and is not gpudra's")
            continue
        if wanted is None:
            if current is not None:
                if not dry_run:
                    store.delete_quota(name, QUOTA_NAME)
                report.deleted.append(f"{name}/{QUOTA_NAME}")
            continue
        if current is not None and (current.get("spec") or {}).get("hard") == wanted["spec"]["hard"]:
            report.unchanged += 1
            continue
        if not dry_run:
            store.put_quota(wanted, exists=current is not None)
        (report.updated if current is not None else report.created).append(f"{name}/{QUOTA_NAME}")
    return report
