"""policyengine.scheduler_path: which decisions of the shipped policies equal kube-scheduler's own KEP-5004 claim."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine import PolicySet, load_policies, load_policy_text, shipped_policies_dir
from policyengine.scheduler_path import scheduler_path

ROOT = Path(__file__).resolve().parents[2]
MAPPED = {"nvidia.com/gpu": "gpu.nvidia.com"}


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return load_policies()


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "examples" / name).read_text())
    return doc


def legacy_pod(gpus: int = 1, **resources: Any) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": gpus, **{k.replace("_", "/", 1).replace("_", "-"): v for k, v in resources.items()}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-x"},
        "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": limits}}]},
    }


def test_a_whole_gpu_pod_is_left_to_the_scheduler_where_the_class_maps_its_resource(policies: PolicySet) -> None:
    pod = legacy_pod(1)
    decision = policies.evaluate(pod, extended_resources=MAPPED)
    native = scheduler_path(pod, decision, MAPPED, policies)
    assert native is not None and decision.policy == "whole-gpu"
    assert native.device_classes == ("gpu.nvidia.com",) and native.resources == (("nvidia.com/gpu", 1),)
    assert "DeviceClass gpu.nvidia.com maps nvidia.com/gpu" in native.reason
    assert "extendedResourceMapping: Translate" in native.reason


def test_a_multi_gpu_pod_gets_the_topology_preference_the_scheduler_claim_lacks(policies: PolicySet) -> None:
    pod = legacy_pod(2)  # KEP-5004's claim is any 2 GPUs; the device plugin would have kept them NVLink-close
    decision = policies.evaluate(pod, extended_resources=MAPPED)
    assert decision.policy == "multi-gpu" and scheduler_path(pod, decision, MAPPED, policies) is None


def test_no_mapping_or_another_class_means_gpudra_translates(policies: PolicySet) -> None:
    pod = legacy_pod(1)
    assert scheduler_path(pod, policies.evaluate(pod), {}, policies) is None
    other = {"nvidia.com/gpu": "whole-gpus"}  # the claim would be gpu.nvidia.com's, not the mapped class's
    assert scheduler_path(pod, policies.evaluate(pod, extended_resources=other), other, policies) is None


def hami_pod() -> dict[str, Any]:
    pod = legacy_pod(1)
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = 4000
    return pod


@pytest.mark.parametrize(
    "pod",
    [example("pod-legacy-vram.yaml"), example("pod-vllm-tp4.yaml"), example("pod-mig-legacy.yaml"), hami_pod()],
    ids=["right-size", "multi-gpu", "mig", "hami"],
)
def test_right_sizing_topology_mig_and_hami_stay_with_gpudra(policies: PolicySet, pod: dict[str, Any]) -> None:
    mapping = {**MAPPED, "nvidia.com/mig-1g.10gb": "mig.nvidia.com"}
    decision = policies.evaluate(pod, extended_resources=mapping)
    assert decision.mutates, decision.message
    assert scheduler_path(pod, decision, mapping, policies) is None


def test_a_namespace_vram_cap_adds_a_selector_so_gpudra_translates(policies: PolicySet) -> None:
    pod = legacy_pod(1)
    namespace = {"metadata": {"name": "team-x", "labels": {"gpudra.io/max-vram": "48Gi"}}}
    decision = policies.evaluate(pod, namespace, extended_resources=MAPPED)
    assert decision.claim is not None and decision.claim["devices"]["requests"][0]["exactly"]["selectors"]
    assert scheduler_path(pod, decision, MAPPED, policies) is None


def test_audit_mode_records_what_enforce_would_do(policies: PolicySet) -> None:
    """An audited namespace previews enforce: the pod would be left to the scheduler, not translated."""
    pod = legacy_pod(1)
    namespace = {"metadata": {"name": "team-x", "labels": {"gpudra.io/mode": "audit"}}}
    decision = policies.evaluate(pod, namespace, extended_resources=MAPPED)
    assert decision.mode == "audit" and scheduler_path(pod, decision, MAPPED, policies) is not None
    off = {"metadata": {"name": "team-x", "labels": {"gpudra.io/mode": "off"}}}
    assert scheduler_path(pod, policies.evaluate(pod, off, extended_resources=MAPPED), MAPPED, policies) is None


def test_a_policy_field_keeps_whole_gpu_pods_for_gpudra(tmp_path: Path) -> None:
    for source in shipped_policies_dir().glob("*.yaml"):
        text = source.read_text()
        if source.name == "whole-gpu.yaml":
            text = text.replace("  mode: enforce\n", "  mode: enforce\n  extendedResourceMapping: Translate\n", 1)
        (tmp_path / source.name).write_text(text)
    policies = load_policies(tmp_path)
    assert not policies.errors
    pod = legacy_pod(1)
    decision = policies.evaluate(pod, extended_resources=MAPPED)
    assert decision.mutates and scheduler_path(pod, decision, MAPPED, policies) is None


def test_the_mapping_is_a_gpu_fact_policies_can_read(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gpudra.io/v1alpha1",
                "kind": "GPUClaimPolicy",
                "metadata": {"name": "mapped-only"},
                "spec": {
                    "matchConditions": [{"name": "legacy", "expression": "gpu.legacy"}],
                    "warnings": [
                        {
                            "expression": "!('nvidia.com/gpu' in gpu.extendedResourceMapping)",
                            "messageExpression": "'mapped to ' + gpu.extendedResourceMapping['nvidia.com/gpu']",
                        }
                    ],
                },
            }
        )
    )
    policies = load_policies(tmp_path)
    pod = legacy_pod(1)
    # only legacy GPU resources are facts; another extended resource of the cluster is not
    mapping = {**MAPPED, "example.com/fpga": "fpga"}
    assert policies.evaluate(pod, extended_resources=mapping).warnings == ("mapped to gpu.nvidia.com",)
    assert policies.evaluate(copy.deepcopy(pod)).warnings == ()


KEEP = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata: {name: keep}
spec:
  priority: 150
  extendedResourceMapping: Translate
  matchConditions:
  - {name: container-b, expression: "gpu.containers.exists(c, c.name == 'b')"}
  claim:
    deviceClassName: gpu.nvidia.com
    count: {expression: "legacy['nvidia.com/gpu']"}
"""


def test_a_pod_decided_by_several_policies_is_kept_when_any_of_them_translates(policies: PolicySet) -> None:
    """Decisions are per container: container b's policy says Translate, so the pod is not left to the scheduler
    although both requests are plain whole GPUs of the mapped class."""
    keep, errors = load_policy_text(KEEP, "keep.yaml")
    assert errors == []
    both = PolicySet.of([*policies.policies, *keep])
    pod = legacy_pod(1)
    pod["spec"]["containers"].append({"name": "b", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}})
    pod["spec"]["containers"][0]["name"] = "a"
    decision = both.evaluate(pod, extended_resources=MAPPED)
    assert decision.policy == "whole-gpu,keep"
    assert scheduler_path(pod, decision, MAPPED, both) is None
    alone = policies.evaluate(pod, extended_resources=MAPPED)  # whole-gpu decides both: left to the scheduler
    assert alone.policy == "whole-gpu" and scheduler_path(pod, alone, MAPPED, policies) is not None
