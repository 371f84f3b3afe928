"""Admission beside KEP-5004: where a DeviceClass maps nvidia.com/gpu, whole-GPU pods are admitted unchanged (no
template, no patch) and counted; right-sized pods are translated; guardrails count both; the cluster's version gates
warnings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from housekeeping import desired_quota, sync_quotas
from kubeapi import NamespaceCache
from policyengine import PolicySet, load_policies, shipped_policies_dir
from webhook.admission import Admission
from webhook.dra_demand import GPU_DEVICE_CLASSES, gpu_classes, spec_gpu_devices
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import AdmissionDenied, parse_review, pod_review

from .test_admission import RecordingApiServer, example

MAPPED = {"nvidia.com/gpu": "gpu.nvidia.com"}


def legacy_pod(name: str = "job", gpus: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
    }


class Mapping:
    """The DeviceClass cache as admission reads it: a callable answering the current mapping."""

    def __init__(self, value: dict[str, str]) -> None:
        self.value = value
        self.reads = 0

    def __call__(self) -> dict[str, str]:
        self.reads += 1
        return self.value


def make(
    mapping: Mapping, namespaces: dict[str, dict[str, Any]] | None = None, **options: Any
) -> tuple[Admission, RecordingApiServer, WebhookMetrics]:
    api = RecordingApiServer(namespaces)
    metrics = WebhookMetrics()
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    admission = Admission(
        store, metrics, writer=api, namespaces=NamespaceCache(api), extended_resources=mapping, **options
    )
    return admission, api, metrics


def mutate(admission: Admission, pod: dict[str, Any], uid: str = "u", namespace: str = "team-x") -> dict[str, Any]:
    response: dict[str, Any] = admission.mutate(parse_review(pod_review(pod, uid=uid, namespace=namespace)))["response"]
    return response


def test_a_whole_gpu_pod_is_admitted_unchanged_with_no_api_write() -> None:
    admission, api, metrics = make(Mapping(MAPPED))
    out = mutate(admission, legacy_pod(gpus=2))
    assert out["allowed"] and "patch" not in out and api.templates == {}
    assert "DeviceClass gpu.nvidia.com maps nvidia.com/gpu" in out["auditAnnotations"]["left-to-scheduler"]
    value = metrics.registry.get_sample_value
    labels = {"policy": "whole-gpu", "device_class": "gpu.nvidia.com"}
    assert value("gpudra_admission_left_to_scheduler_total", labels) == 1
    reviews = {"endpoint": "mutate", "operation": "CREATE", "policy": "whole-gpu", "outcome": "left_to_scheduler"}
    assert value("gpudra_admission_reviews_total", reviews) == 1
    mutate(admission, legacy_pod("again", gpus=2), uid="u2")  # served from the decision cache: counted again
    assert value("gpudra_admission_left_to_scheduler_total", labels) == 2


def test_a_right_sized_pod_still_gets_gpudras_claim() -> None:
    admission, api, metrics = make(Mapping(MAPPED))
    out = mutate(admission, example("pod-legacy-vram.yaml"))
    assert out["patchType"] == "JSONPatch" and len(api.templates) == 1
    assert metrics.registry.get_sample_value("gpudra_admission_left_to_scheduler_total") is None


def test_the_decision_cache_follows_the_mapping() -> None:
    """The same pod is translated once the mapping goes (the mapping is part of the cache key)."""
    mapping = Mapping(MAPPED)
    admission, api, _ = make(mapping)
    assert "patch" not in mutate(admission, legacy_pod(), uid="a")
    mapping.value = {}
    assert "patch" in mutate(admission, legacy_pod(), uid="b") and len(api.templates) == 1
    mapping.value = MAPPED
    assert "patch" not in mutate(admission, legacy_pod(), uid="c")


def test_guardrails_count_the_devices_of_pods_left_to_the_scheduler() -> None:
    namespaces = {"capped": {"metadata": {"name": "capped", "labels": {"gpudra.io/max-gpus": "2"}}}}
    admission, api, _ = make(Mapping(MAPPED), namespaces)
    assert "patch" not in mutate(admission, legacy_pod(gpus=2), namespace="capped")
    with pytest.raises(AdmissionDenied) as denied:
        mutate(admission, legacy_pod("big", gpus=3), namespace="capped")
    assert "asks for 3 GPU devices" in denied.value.message and "gpudra.io/max-gpus" in denied.value.message
    with pytest.raises(AdmissionDenied):  # the validating pass sees the same pod, unchanged
        admission.validate(parse_review(pod_review(legacy_pod("big", gpus=3), uid="v", namespace="capped")))
    assert api.templates == {}


def test_claims_of_a_class_mapping_a_legacy_resource_count_as_gpus() -> None:
    spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "whole-gpus", "count": 3}}]}}
    assert spec_gpu_devices(spec) == 0
    classes = gpu_classes({"nvidia.com/gpu": "whole-gpus", "example.com/fpga": "fpga"})
    assert classes == GPU_DEVICE_CLASSES | {"whole-gpus"}
    assert spec_gpu_devices(spec, classes) == 3


def test_the_namespace_quota_caps_mapped_classes_and_resources() -> None:
    namespace = {"metadata": {"name": "team-x", "labels": {"gpudra.io/max-gpus": "4"}}}
    plain = desired_quota(namespace)
    assert plain is not None
    mapped = desired_quota(namespace, {"nvidia.com/gpu": "gpu.nvidia.com", "nvidia.com/mig-1g.10gb": "mig-1g10gb"})
    assert mapped is not None
    added = set(mapped["spec"]["hard"]) - set(plain["spec"]["hard"])
    assert added == {"mig-1g10gb.deviceclass.resource.k8s.io/devices", "requests.nvidia.com/mig-1g.10gb"}
    assert all(v == "4" for v in mapped["spec"]["hard"].values())


def test_sync_quotas_reads_the_device_classes_when_the_store_lists_them() -> None:
    class Store:
        def __init__(self) -> None:
            self.put: list[dict[str, Any]] = []

        def list_namespaces(self) -> list[dict[str, Any]]:
            return [{"metadata": {"name": "team-x", "labels": {"gpudra.io/max-gpus": "1"}}}]

        def list_quotas(self, name: str) -> list[dict[str, Any]]:
            return []

        def put_quota(self, quota: dict[str, Any], *, exists: bool) -> None:
            self.put.append(quota)

        def delete_quota(self, namespace: str, name: str) -> None:
            raise AssertionError("nothing to delete")

        def list_device_classes(self) -> list[dict[str, Any]]:
            return [{"metadata": {"name": "whole-gpus"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}}]

    store = Store()
    report = sync_quotas(store)
    assert report.created == ["team-x/gpudra-gpu-cap"]
    assert "whole-gpus.deviceclass.resource.k8s.io/devices" in store.put[0]["spec"]["hard"]


def test_templates_warn_about_features_the_clusters_version_does_not_serve(tmp_path: Path) -> None:
    """The webhook read the API server's version (1.35 here): the right-size claim's shared alternative needs
    consumable capacity, on by default from 1.36."""
    admission, _, _ = make(Mapping({}), k8s_minor=35)
    pod = example("pod-legacy-vram.yaml")
    out = mutate(admission, pod)
    warnings = [w for w in out.get("warnings", []) if "DRAConsumableCapacity" in w]
    assert warnings and "target 1.35" in warnings[0] and warnings[0].startswith("ResourceClaimTemplate gpudra-")
    current, _, _ = make(Mapping({}), k8s_minor=37)
    assert not any("not on by default" in w for w in mutate(current, pod).get("warnings", []))


def test_pods_the_policies_deny_are_denied_whatever_the_mapping() -> None:
    admission, _, _ = make(Mapping(MAPPED))
    with pytest.raises(AdmissionDenied):
        mutate(admission, yaml.safe_load(yaml.safe_dump(example("pod-mixed.yaml"))))


def test_sync_quotas_leaves_a_namespace_being_deleted_alone() -> None:
    class Store:
        def list_namespaces(self) -> list[dict[str, Any]]:
            labels = {"gpudra.io/max-gpus": "1"}
            return [
                {"metadata": {"name": "gone", "labels": labels}, "status": {"phase": "Terminating"}},
                {"metadata": {"name": "going", "labels": labels, "deletionTimestamp": "2026-12-05T08:00:00Z"}},
            ]

        def list_quotas(self, name: str) -> list[dict[str, Any]]:
            return []

        def put_quota(self, quota: dict[str, Any], *, exists: bool) -> None:
            raise AssertionError("the API server refuses new objects in a terminating namespace")

        def delete_quota(self, namespace: str, name: str) -> None:
            raise AssertionError("nothing to delete")

    report = sync_quotas(Store())
    assert report.created == [] and report.unchanged == 2


def test_an_audited_namespace_records_the_scheduler_path_not_a_translation() -> None:
    namespaces = {"team-b": example("namespace-audit.yaml")}
    admission, api, _ = make(Mapping(MAPPED), namespaces)
    out = mutate(admission, legacy_pod(), namespace="team-b")
    assert "patch" not in out and api.templates == {}
    assert set(out["auditAnnotations"]) == {"left-to-scheduler"}
    sized = mutate(admission, example("pod-legacy-vram.yaml"), uid="v", namespace="team-b")
    assert "would-translate" in sized["auditAnnotations"] and api.templates == {}
