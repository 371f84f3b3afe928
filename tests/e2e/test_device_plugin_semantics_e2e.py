"""Issue 40's pods, translated by the shipped policies and bound by the real kube-scheduler: the init + native MIG
sidecar + TP=2 vLLM pod on 3 H100s published with DynamicMIG (one claim: 2 whole GPUs and a MIG slice), and a
torchrun x4 Job's pod on 8 L40S (4 GPUs under one PCIe root, through its topology preference).

The manifests are in tests/policyengine/device_plugin/. No kubelet: the pod bound with its claim allocated is the
observable result.
"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.documents import read_documents
from dra.gpus import get
from manifest_translation import translate_documents
from policyengine import load_policies
from policyengine.translate import translate
from tests.controlplane import nvidia
from tests.controlplane.kube import Kube, wait_for

pytestmark = [pytest.mark.e2e]

MANIFESTS = Path(__file__).resolve().parents[1] / "policyengine" / "device_plugin"
MANIFEST = MANIFESTS / "vllm-init-sidecar-tp2.yaml"


def _bound(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        found = kube.get("Pod", name, namespace)
        return found if found["spec"].get("nodeName") else None

    try:
        return wait_for(bound, timeout=60.0, what=f"pod {namespace}/{name} to be bound")
    except TimeoutError as e:
        raise AssertionError(f"{e}; events: {kube.pod_events(namespace, name)}") from e


def _h100_node(kube: Kube, gpus: int) -> str:
    node = f"h100-{uuid.uuid4().hex[:6]}"
    for device_class in nvidia.device_classes():
        kube.apply(device_class)
    kube.create_node(node)
    for resource_slice in nvidia.dynamic_mig_slices(node, gpus=gpus, model=nvidia.H100):
        kube.create(resource_slice)
    return node


def _allocated(kube: Kube, namespace: str, source: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Translate `source` with the shipped policies, create it, and wait for it to be bound: (the bound pod, its
    claim's devices by request)."""
    decision = load_policies().evaluate(source)
    assert decision.allowed, decision.message
    translation = translate(source, decision)
    (template,) = translation.templates
    kube.create(template, namespace)
    kube.create(translation.pod, namespace)
    bound = _bound(kube, namespace, source["metadata"]["name"])
    (status,) = bound["status"]["resourceClaimStatuses"]
    claim = kube.get("ResourceClaim", status["resourceClaimName"], namespace)
    by_request: dict[str, list[str]] = {}
    for result in claim["status"]["allocation"]["devices"]["results"]:
        by_request.setdefault(result["request"].split("/")[0], []).append(result["device"])
    return bound, by_request


def test_an_init_container_asking_four_gpus_binds_with_what_the_device_plugin_allocates(
    kube: Kube, k8s_namespace: str
) -> None:
    """Init 4 GPUs + MIG sidecar + main 2: the kubelet's device manager gives the pod 4 GPUs and a slice, so it binds
    on 5 H100s (4 whole, the slice carved from the fifth); the init container references vllm's request and its own
    extra request of 2, and the API server takes both references."""
    node = _h100_node(kube, 5)
    source = yaml.safe_load(MANIFEST.read_text())
    source["metadata"]["namespace"] = k8s_namespace
    source["spec"]["initContainers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4
    for container in [*source["spec"]["initContainers"], *source["spec"]["containers"]]:
        container["image"] = "registry.k8s.io/pause:3.10"
    source["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    source["spec"]["terminationGracePeriodSeconds"] = 0
    bound, by_request = _allocated(kube, k8s_namespace, source)
    refs = [r["request"] for r in bound["spec"]["initContainers"][0]["resources"]["claims"]]
    assert refs == ["vllm", "warm-cache"]
    assert sorted(by_request) == ["embed", "vllm", "warm-cache"]
    whole = by_request["vllm"] + by_request["warm-cache"]
    assert len(whole) == 4 and len(set(whole)) == 4 and all("-mig-" not in d for d in whole)
    (slice_,) = by_request["embed"]
    assert "-mig-1g10gb-" in slice_ and slice_.split("-mig-")[0] not in whole


def test_the_init_sidecar_tp2_pod_binds_on_three_h100s_with_two_gpus_and_a_slice(
    kube: Kube, k8s_namespace: str
) -> None:
    node = _h100_node(kube, 3)
    source = yaml.safe_load(MANIFEST.read_text())
    source["metadata"]["namespace"] = k8s_namespace
    for container in [*source["spec"]["initContainers"], *source["spec"]["containers"]]:
        container["image"] = "registry.k8s.io/pause:3.10"
    source["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    source["spec"]["terminationGracePeriodSeconds"] = 0
    _, by_request = _allocated(kube, k8s_namespace, source)
    assert sorted(by_request) == ["embed", "vllm"], by_request  # warm-cache shares vllm's request
    assert len(by_request["vllm"]) == 2 and all("-mig-" not in d for d in by_request["vllm"])
    (slice_,) = by_request["embed"]
    assert "-mig-1g10gb-" in slice_ and slice_.split("-mig-")[0] not in by_request["vllm"]


def test_a_torchrun_x4_jobs_pod_binds_four_gpus_under_one_pcie_root(kube: Kube, k8s_namespace: str) -> None:
    node = f"l40s-{uuid.uuid4().hex[:6]}"
    for device_class in nvidia.device_classes():
        kube.apply(device_class)
    kube.create_node(node)
    resource_slice = nvidia.full_gpu_slice(node, get("L40S"), 8)
    kube.create(resource_slice)
    roots = {
        d["name"]: d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"]
        for d in resource_slice["spec"]["devices"]
    }
    assert len(set(roots.values())) > 1  # a choice to get wrong

    ((job_translation,), errors) = translate_documents(read_documents(MANIFESTS / "torchrun-job.yaml"), load_policies())
    assert errors == []
    (template,) = job_translation.claim_templates
    template["metadata"]["namespace"] = k8s_namespace
    kube.create(template, k8s_namespace)
    pod_spec = copy.deepcopy(job_translation.result["spec"]["template"]["spec"])
    pod_spec["containers"][0]["image"] = "registry.k8s.io/pause:3.10"
    pod_spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    pod_spec["terminationGracePeriodSeconds"] = 0
    kube.create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ddp-train-0"}, "spec": pod_spec}, k8s_namespace
    )

    bound = _bound(kube, k8s_namespace, "ddp-train-0")
    (status,) = bound["status"]["resourceClaimStatuses"]
    claim = kube.get("ResourceClaim", status["resourceClaimName"], k8s_namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert {r["request"] for r in results} == {"trainer/same-pcieroot"} and len(results) == 4
    assert len({roots[r["device"]] for r in results}) == 1
