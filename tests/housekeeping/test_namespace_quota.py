"""`gpudra quota`: the namespace label gpudra.io/max-gpus as a ResourceQuota, synchronised in one pass (an in-memory
API server here; tests/e2e/test_tenant_caps_e2e.py has the real one refuse claims with it)."""

from __future__ import annotations

from typing import Any

import pytest

from housekeeping import QUOTA_NAME, desired_quota, sync_quotas


def _ns(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


class Quotas:
    def __init__(self, namespaces: list[dict[str, Any]], quotas: list[dict[str, Any]] | None = None) -> None:
        self.namespaces = namespaces
        self.quotas = {q["metadata"]["namespace"]: q for q in quotas or []}
        self.calls: list[str] = []

    def list_namespaces(self) -> list[dict[str, Any]]:
        return self.namespaces

    def list_quotas(self, name: str) -> list[dict[str, Any]]:
        return [q for q in self.quotas.values() if q["metadata"]["name"] == name]

    def put_quota(self, quota: dict[str, Any], *, exists: bool) -> None:
        self.calls.append(f"{'replace' if exists else 'create'} {quota['metadata']['namespace']}")
        self.quotas[quota["metadata"]["namespace"]] = quota

    def delete_quota(self, namespace: str, name: str) -> None:
        self.calls.append(f"delete {namespace}")
        del self.quotas[namespace]


def test_the_label_becomes_a_per_class_device_quota_and_a_legacy_gpu_quota() -> None:
    quota = desired_quota(_ns("team", **{"gpudra.io/max-gpus": "2"}))
    assert quota is not None
    assert quota["metadata"]["name"] == QUOTA_NAME and quota["metadata"]["namespace"] == "team"
    assert quota["spec"]["hard"] == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "2",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "2",
        "vfio.gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "2",
        "requests.nvidia.com/gpu": "2",
    }
    assert desired_quota(_ns("open")) is None


@pytest.mark.parametrize("value", ["four", "-1", "1.5", "", "9999999999"])
def test_a_malformed_label_is_named(value: str) -> None:
    with pytest.raises(ValueError, match="namespace team: label gpudra.io/max-gpus must be a whole number"):
        desired_quota(_ns("team", **{"gpudra.io/max-gpus": value}))


def test_one_pass_creates_updates_deletes_and_leaves_foreign_quotas_alone() -> None:
    stale = desired_quota(_ns("shrunk", **{"gpudra.io/max-gpus": "8"}))
    orphan = desired_quota(_ns("unlabelled", **{"gpudra.io/max-gpus": "1"}))
    same = desired_quota(_ns("same", **{"gpudra.io/max-gpus": "3"}))
    foreign = {"metadata": {"name": QUOTA_NAME, "namespace": "theirs"}, "spec": {"hard": {"pods": "1"}}}
    store = Quotas(
        [
            _ns("new", **{"gpudra.io/max-gpus": "2"}),
            _ns("shrunk", **{"gpudra.io/max-gpus": "2"}),
            _ns("unlabelled"),
            _ns("same", **{"gpudra.io/max-gpus": "3"}),
            _ns("theirs", **{"gpudra.io/max-gpus": "1"}),
            _ns("typo", **{"gpudra.io/max-gpus": "two"}),
        ],
        [q for q in (stale, orphan, same) if q is not None] + [foreign],
    )
    dry = sync_quotas(store, dry_run=True)
    assert store.calls == []
    report = sync_quotas(store)
    assert report.as_dict() == dry.as_dict()
    assert report.created == [f"new/{QUOTA_NAME}"] and report.updated == [f"shrunk/{QUOTA_NAME}"]
    assert report.deleted == [f"unlabelled/{QUOTA_NAME}"] and report.unchanged == 1
    assert len(report.invalid) == 2 and "theirs" in report.invalid[0] and "typo" in report.invalid[1]
    assert store.quotas["shrunk"]["spec"]["hard"]["requests.nvidia.com/gpu"] == "2"
    assert store.quotas["theirs"] is foreign
    assert sync_quotas(store).as_dict() == {
        "created": [], "updated": [], "deleted": [], "unchanged": 3, "invalid": report.invalid,
    }  # fmt: skip
